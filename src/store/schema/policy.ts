// Policy versions and the per-project pointer to the active one. The pointer is one row per
// project, changed in the same transaction as the versions' states and the audit event, so every
// instance sees the new version on its next read (docs/policy-lifecycle.md).

/** saved: never active yet; active: the one that decides; retired: was active, since replaced. */
export type PolicyVersionState = 'saved' | 'active' | 'retired';

export interface PolicyVersionsTable {
  project_id: string;
  /** 1, 2, 3, … per project, assigned under the project's policy lock. */
  version: number;
  /** `pol_…`, for references in audit events. */
  id: string;
  /** RFC 8785 canonical JSON of the validated document. */
  document: string;
  /** Lowercase hex SHA-256 of `document`. */
  hash: string;
  note: string;
  state: PolicyVersionState;
  /** The principal (`prn_…`) that saved it; the four-eyes rule compares principals, not keys. */
  created_by: string;
  /** The audit actor that saved it (`key_…` or `prn_…`). */
  created_via: string;
  created_at: string;
  activated_at: string | null;
  activated_by: string | null;
  retired_at: string | null;
}

export interface PolicyActiveTable {
  project_id: string;
  version: number;
  hash: string;
  activated_at: string;
  /** The principal that activated it. */
  activated_by: string;
}

export interface PolicyTables {
  policy_versions: PolicyVersionsTable;
  policy_active: PolicyActiveTable;
}
