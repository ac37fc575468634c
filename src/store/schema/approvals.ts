// Approval keys and approvals (docs/approvals.md). The obligation itself is `approval_requests`
// (schema/decisions.ts); its `status` column carries pending → approved → consumed | withdrawn.

/** An Ed25519 public key a principal holding APPROVER signs approvals with. */
export interface ApprovalKeysTable {
  id: string;
  project_id: string;
  principal_id: string;
  /** Raw 32 bytes, base64url. */
  public_key: string;
  name: string | null;
  created_at: string;
  created_by: string;
  retired_at: string | null;
  retired_by: string | null;
}

/** One approval: the signature that discharged (or will discharge) one obligation. */
export interface ApprovalsTable {
  id: string;
  project_id: string;
  /** Unique: an obligation is approved at most once. */
  approval_request_id: string;
  key_id: string;
  principal_id: string;
  /** 64-byte Ed25519 signature over the canonical statement, base64url. */
  signature: string;
  recorded_by: string;
  created_at: string;
  revoked_at: string | null;
  revoked_by: string | null;
  revoke_reason: string | null;
  consumed_at: string | null;
  consumed_by_decision: string | null;
  /** The approver's last_grant when recorded: only an APPROVER grant numbered up to it counts (migration 0911). */
  grants_upto: number;
}

export interface ApprovalTables {
  approval_keys: ApprovalKeysTable;
  approvals: ApprovalsTable;
}
