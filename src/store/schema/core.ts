// Tables of the foundation: projects, principals and their roles, API keys, audit events.
// Timestamps are RFC 3339 UTC text; JSON columns are text; money and counters are BIGINT.
import type { Generated } from 'kysely';

export interface ProjectsTable {
  id: string;
  name: string;
  created_at: string;
}

export interface PrincipalsTable {
  id: string;
  kind: 'person' | 'service';
  /** Login name for people (lower-cased e-mail or handle); display name for services. */
  name: string;
  password_hash: string | null;
  created_at: string;
  disabled_at: string | null;
}

export interface MembershipsTable {
  project_id: string;
  principal_id: string;
  created_at: string;
  created_by: string | null;
  revoked_at: string | null;
  /** The number given to this member's latest role grant (migration 0911): grants are numbered by the database, not stamped by clocks. */
  last_grant: Generated<number>;
}

export interface RoleGrantsTable {
  project_id: string;
  principal_id: string;
  role: string;
  granted_at: string;
  granted_by: string | null;
  /** One past the holder's previous grant (memberships.last_grant), taken under the roles lock. */
  grant_no: Generated<number>;
}

export interface ApiKeysTable {
  id: string;
  project_id: string;
  principal_id: string;
  name: string;
  /** SHA-256 (hex) of the secret: keys are 256-bit random, so a fast hash is the right one. */
  secret_hash: string;
  /** JSON array of roles, a subset of the principal's roles when minted; re-checked live. */
  roles: string;
  created_at: string;
  created_by: string;
  revoked_at: string | null;
  revoked_by: string | null;
  /** Its holder's last_grant when minted: the key counts only grants numbered up to it. */
  grants_upto: Generated<number>;
}

export interface AuditEventsTable {
  id: string;
  project_id: string;
  kind: string;
  /** Who caused it: `prn_…`, `key_…`, or `system`. */
  actor: string;
  created_at: string;
  /** Canonical JSON of the event's own fields. */
  data: string;
  /**
   * Position in the Merkle log, assigned gaplessly by the sequencer after commit. (PostgreSQL also
   * has `pending`, true until the sequencer sets this: migration 0607; not in this type, as SQLite
   * has no such column.)
   */
  leaf_index: number | null;
  /** Its leaf hash, when written with the event (migration 0605); the sequencer hashes the text otherwise. */
  leaf_hash: Uint8Array | null;
  /** Insertion order within this database; only a hint for the sequencer (it may have gaps). */
  seq: Generated<number>;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface CoreTables {
  projects: ProjectsTable;
  principals: PrincipalsTable;
  memberships: MembershipsTable;
  role_grants: RoleGrantsTable;
  api_keys: ApiKeysTable;
  audit_events: AuditEventsTable;
  settings: SettingsTable;
}
