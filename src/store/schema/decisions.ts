// Decisions themselves are recorded once, as audit events (migration 0604; domain/decision/event.ts).

/** An obligation: what a person must approve before the same action may proceed. */
export interface ApprovalRequestsTable {
  id: string;
  project_id: string;
  decision_id: string;
  agent: string;
  action: string;
  resource: string;
  amount_minor: number | null;
  amount_currency: string | null;
  intent: string | null;
  permit_commitment: string | null;
  policy_version: number;
  matched_rules: string;
  /** The call a request with an execution asked for: RFC 8785 text of {merchant, operation, payload}; null without one. */
  execution: string | null;
  /** The API key (`key_…` id) whose request opened it; null for obligations older than migration 0904. */
  requested_by: string | null;
  /** The form of the statement an approver signs: 1 without the matched rules (before migration 0907), 2 with them. */
  statement_version: number;
  /** pending | approved | consumed | revoked | expired (docs/approvals.md). */
  status: string;
  created_at: string;
  expires_at: string;
}

export interface DecisionTables {
  approval_requests: ApprovalRequestsTable;
}
