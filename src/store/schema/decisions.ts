// Every authorization decision, as the authorize service records it (one row per decision, in the
// transaction of its audit event). Policy replay reads these rows to re-evaluate their inputs.

export interface DecisionsTable {
  /** `dec_…` */
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
  /** RFC 3339 UTC: the server's clock when the decision was taken. */
  request_time: string;
  /** ALLOW | DENY | REQUIRE_APPROVAL | REPLAY */
  decision: string;
  reason_code: string;
  /** The policy version that decided; null when no policy was active. */
  policy_version: number | null;
  /** JSON array of rule ids. */
  matched_rules: string;
  created_at: string;
}

export interface DecisionTables {
  decisions: DecisionsTable;
}
