// The data of a decision's audit event, written as RFC 8785 canonical JSON directly: its members
// are fixed, so they are emitted in JCS order (UTF-16 code units) without the generic canonicalizer
// walking and sorting an object for every decision. Equal to canonicalize(data) for every input
// (tested as a property in test/domain/decision/event.test.ts).
import type { Money } from '../money/index.ts';
import { isPlainJsonString } from '../../lib/json-string.ts';

export interface DecisionEventData {
  decision_id: string;
  request_id: string;
  agent: string;
  action: string;
  resource: string;
  amount: Money | null;
  intent: string | null;
  decision: string;
  reason_code: string;
  detail: string | null;
  /**
   * The merchant call the request asked for, when it asked for one: so the log shows what a DENY or
   * REQUIRE_APPROVAL refused, not only what an ALLOW ran (its `execution.started` holds the payload).
   */
  execution?: { merchant: string; operation: string; nonce: string };
  policy_version: number | null;
  matched_rules: readonly string[];
  permit_commitment: string | null;
  delegation_depth: number;
  request_time: string;
  approval_request_id: string | null;
}

// ECMAScript's JSON serialization of strings and finite numbers is exactly JCS's (RFC 8785 3.2.2).
// A lone surrogate has no canonical form (the canonicalizer refuses it too; requests carrying one
// are refused long before, http/validation.ts). A string with nothing to escape is quoted as it is
// (lib/json-string.ts): most members are ids, DIDs and codes.
const str = (s: string | null) => {
  if (s === null) return 'null';
  if (isPlainJsonString(s)) return `"${s}"`;
  if (!s.isWellFormed()) throw new TypeError('a decision event holds well-formed strings only');
  return JSON.stringify(s);
};
const num = (n: number | null) => {
  if (n === null) return 'null';
  if (!Number.isFinite(n)) throw new TypeError('a decision event holds finite numbers only');
  // For a finite number, String(n) is JSON.stringify(n) (both Number::toString; -0 gives "0").
  return String(n);
};

export function canonicalDecisionData(d: DecisionEventData): string {
  const amount = d.amount === null ? 'null' : `{"currency":${str(d.amount.currency)},"minor":${num(d.amount.minor)}}`;
  let rules = '[';
  for (let i = 0; i < d.matched_rules.length; i++) rules += (i ? ',' : '') + str(d.matched_rules[i]!);
  rules += ']';
  return `{"action":${str(d.action)},"agent":${str(d.agent)},"amount":${amount},"approval_request_id":${str(d.approval_request_id)},`
    + `"decision":${str(d.decision)},"decision_id":${str(d.decision_id)},"delegation_depth":${num(d.delegation_depth)},"detail":${str(d.detail)},`
    + (d.execution ? `"execution":{"merchant":${str(d.execution.merchant)},"nonce":${str(d.execution.nonce)},"operation":${str(d.execution.operation)}},` : '')
    + `"intent":${str(d.intent)},"matched_rules":${rules},"permit_commitment":${str(d.permit_commitment)},"policy_version":${num(d.policy_version)},`
    + `"reason_code":${str(d.reason_code)},"request_id":${str(d.request_id)},"request_time":${str(d.request_time)},"resource":${str(d.resource)}}`;
}
