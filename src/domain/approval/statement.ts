// The canonical statement of an obligation: the exact bytes an approver signs (docs/approvals.md).
// RFC 8785 canonical JSON, so any signer in any language can rebuild the same bytes from the
// obligation's fields, and a signature over anything else (another amount, another agent, another
// expiry) does not verify.
import canonicalize from 'canonicalize';
import { parseJsonExactly } from '../../lib/json-parse.ts';

export const APPROVAL_STATEMENT_TYPE = 'gavel-approval/v1';

/**
 * The form new obligations' statements take: 2 names the matched rules (decision 0505). An
 * obligation keeps the form it was opened with, so a signature over it goes on verifying.
 */
export const STATEMENT_VERSION = 2;

/** What an obligation states; the fields of an `approval_requests` row that an approval covers. */
export interface ObligationFacts {
  approval_request_id: string;
  project_id: string;
  agent: string;
  action: string;
  resource: string;
  amount: { minor: number; currency: string } | null;
  intent: string | null;
  /** The call the request asked for, RFC 8785 text of {merchant, operation, payload}; null without an execution. */
  execution: string | null;
  policy_version: number;
  /** The rules that asked for approval, as recorded; null for a statement of form 1, which names none. */
  matched_rules: string[] | null;
  /** RFC 3339 (the stored text, byte for byte). */
  expires_at: string;
}

/** `execution` is present only for an obligation that states a call, so statements without one keep their bytes. */
export interface ApprovalStatement extends Omit<ObligationFacts, 'execution' | 'matched_rules'> {
  type: typeof APPROVAL_STATEMENT_TYPE;
  execution?: { merchant: string; operation: string; payload: unknown };
  matched_rules?: string[];
}

export function approvalStatement(o: ObligationFacts): { statement: ApprovalStatement; text: string; bytes: Uint8Array } {
  const statement: ApprovalStatement = {
    type: APPROVAL_STATEMENT_TYPE,
    approval_request_id: o.approval_request_id,
    project_id: o.project_id,
    agent: o.agent,
    action: o.action,
    resource: o.resource,
    amount: o.amount ? { minor: o.amount.minor, currency: o.amount.currency } : null,
    intent: o.intent,
    ...(o.execution !== null ? { execution: parseJsonExactly(o.execution) as NonNullable<ApprovalStatement['execution']> } : {}),
    policy_version: o.policy_version,
    ...(o.matched_rules !== null ? { matched_rules: [...o.matched_rules] } : {}),
    expires_at: o.expires_at,
  };
  const text = canonicalize(statement)!;
  return { statement, text, bytes: new TextEncoder().encode(text) };
}
