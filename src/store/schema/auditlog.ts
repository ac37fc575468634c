// Storage of the verifiable audit log (one log per installation; events carry project_id).
// audit_nodes holds every complete subtree hash of two leaves or more of the RFC 6962 tree, written
// once, never changed; a single leaf's hash is its event's leaf_hash (decision 0603).
// audit_log_state is the single row that linearizes sequencing: its size is the next leaf index.
// audit_checkpoints holds the signed checkpoints and the witness's cosignature lines.

export interface AuditNodesTable {
  /** The key's first part: the last leaf the node covers, (idx + 1) * 2^level - 1 (migration 0602). */
  pos: number;
  level: number;
  idx: number;
  hash: Uint8Array;
}

export interface AuditLogStateTable {
  /** Always 1. */
  id: number;
  /** Checkpoint origin and log key name, e.g. `gavel.local/<install id>/log`. */
  origin: string;
  /** Number of sequenced leaves: leaves 0..size-1 exist, the next event gets index `size`. */
  size: number;
  /** RFC 6962 root of the first `size` leaves. */
  root: Uint8Array;
  updated_at: string;
  // SQLite also has `last_seq`, the seq of the last event sequenced (migration 0608); not in this
  // type, as PostgreSQL lacks it: read and written with raw SQL.
}

export interface AuditCheckpointsTable {
  size: number;
  root: Uint8Array;
  /** The signed note as the log signed it (body, blank line, the log's signature line). */
  note: string;
  created_at: string;
  /** The witness's cosignature lines (each "— name base64\n"), concatenated; null until witnessed. */
  cosignatures: string | null;
  witnessed_at: string | null;
}

/** The witness's last refusal or absence (one row, id 1; migration 0905). */
export interface AuditWitnessProblemTable {
  id: number;
  /** refused | conflict | invalid_cosignature | unavailable (services/auditlog/checkpointer.ts). */
  kind: string;
  reason: string | null;
  at: string;
}

export interface AuditLogTables {
  audit_witness_problem: AuditWitnessProblemTable;
  audit_nodes: AuditNodesTable;
  audit_log_state: AuditLogStateTable;
  audit_checkpoints: AuditCheckpointsTable;
}
