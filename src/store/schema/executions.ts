// Executions: one merchant call per nonce (invariant 2), its outcome, and its resolution by a person.
export interface ExecutionsTable {
  id: string;
  project_id: string;
  /** Unique per project: the nonce binds one execution to one action. */
  nonce: string;
  /** SHA-256 hex of the canonical action (docs/executions.md "The same action"). */
  fingerprint: string;
  decision_id: string;
  /** The decision's audit event. */
  decision_audit_id: string;
  policy_version: number | null;
  agent: string;
  action: string;
  resource: string;
  merchant: string;
  operation: string;
  /** IN_FLIGHT | SUCCEEDED | FAILED | UNKNOWN. */
  status: string;
  /** Why the status is what it is (merchant HTTP status, timeout, process stopped...). */
  note: string | null;
  http_status: number | null;
  /** The service instance that makes the call (recovery finds rows of dead instances). */
  instance_id: string;
  created_at: string;
  completed_at: string | null;
  /** Set only when a person resolved an UNKNOWN. */
  resolved_at: string | null;
  resolved_by: string | null;
  resolution_note: string | null;
}

/** One row per running service instance; a stale heartbeat means the instance is dead. */
export interface ExecutionInstancesTable {
  id: string;
  started_at: string;
  heartbeat_at: string;
  /** The longest timeout of the instance's own merchants, which bounds its calls (migration 0910); null: not stated. */
  max_timeout_ms: number | null;
}

export interface ExecutionTables {
  executions: ExecutionsTable;
  execution_instances: ExecutionInstancesTable;
}
