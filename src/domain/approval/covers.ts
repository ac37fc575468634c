// Whether an authorize request is exactly the action an obligation states: same agent, action,
// resource, amount (minor units and currency), intent and execution call. A different amount is not covered,
// larger or smaller: the approver approved these bytes, not a range.
import type { ObligationFacts } from './statement.ts';

export interface RequestFacts {
  agent: string;
  action: string;
  resource: string;
  amount?: { minor: number; currency: string } | undefined;
  intent?: string | undefined;
  /** The call the request asks for (RFC 8785 text, as ObligationFacts.execution), or null. */
  execution?: string | null | undefined;
  /** The policy version deciding the request; compared when given (the statement names the one the approver saw). */
  policy_version?: number | null | undefined;
  /** The rules that asked for a person now; compared when given and the statement names rules (form 2). */
  matched_rules?: readonly string[] | undefined;
}

/** null when covered; else the first field that differs. */
export function uncoveredField(o: Pick<ObligationFacts, 'agent' | 'action' | 'resource' | 'amount' | 'intent' | 'execution' | 'policy_version'> & Partial<Pick<ObligationFacts, 'matched_rules'>>, r: RequestFacts): string | null {
  if (o.agent !== r.agent) return 'agent';
  if (o.action !== r.action) return 'action';
  if (o.resource !== r.resource) return 'resource';
  const a = o.amount;
  const b = r.amount;
  if ((a === null) !== (b === undefined)) return 'amount';
  if (a && b && (a.minor !== b.minor || a.currency !== b.currency)) return 'amount';
  if ((o.intent ?? null) !== (r.intent ?? null)) return 'intent';
  // The call too (merchant, operation, payload; canonical text compares exactly): an approval of one
  // payment is not an approval of another merchant call, and one given without a call covers none.
  if ((o.execution ?? null) !== (r.execution ?? null)) return 'execution';
  // The statement names the policy version that asked for a person: an approval given under one
  // policy is not carried over to another (a new version may ask for approval for other reasons).
  if (r.policy_version !== undefined && o.policy_version !== r.policy_version) return 'policy_version';
  // And the rules that asked: under the same version, another permit (its commitment, its depth) or
  // another time may ask a person for a reason the approver never read (decision 0505, addendum).
  const rules = o.matched_rules ?? null;
  if (r.matched_rules !== undefined && rules !== null && !sameRules(rules, r.matched_rules)) return 'matched_rules';
  return null;
}

const sameRules = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((id, i) => id === b[i]);
