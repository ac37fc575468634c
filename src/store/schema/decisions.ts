// Every authorize decision, with the inputs that produced it (for replay simulation and audit).
export interface DecisionsTable {
  id: string;
  project_id: string;
  request_id: string;
  audit_id: string;
  agent: string;
  action: string;
  resource: string;
  amount_minor: number | null;
  amount_currency: string | null;
  delegation_depth: number;
  permit_commitment: string | null;
  request_time: string;
  decision: string;
  reason_code: string;
  policy_version: number | null;
  /** JSON array of rule ids. */
  matched_rules: string;
  created_at: string;
  intent: string | null;
  /** The obligation a REQUIRE_APPROVAL opened, or the one an approval discharged. */
  approval_request_id: string | null;
}

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
  /** pending | approved | consumed | revoked | expired (docs/approvals.md). */
  status: string;
  created_at: string;
  expires_at: string;
}

export interface DecisionTables {
  decisions: DecisionsTable;
  approval_requests: ApprovalRequestsTable;
}
