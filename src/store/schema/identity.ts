// Tables of the identity capability (migration 0100).

export interface SessionsTable {
  /** `ses_…`: the internal id, used in audit events and to bind the CSRF token. Never a credential. */
  id: string;
  /** SHA-256 (hex) of the cookie's 256-bit random token; the token itself is never stored. */
  token_hash: string;
  principal_id: string;
  created_at: string;
  /** Last request seen; the idle lifetime counts from here. */
  last_seen_at: string;
  /** Absolute end, fixed at login. */
  expires_at: string;
  ended_at: string | null;
  /** logout | member_revoked | replaced (login over an existing session) | password_reset (`gavel reset-password`). */
  ended_reason: string | null;
}

export interface LoginThrottleTable {
  /** `account:<name>` or `address:<ip>`. */
  key: string;
  failures: number;
  window_start: string;
  locked_until: string | null;
}

export interface SodSettingsTable {
  project_id: string;
  /** Canonical JSON of the SoD document (see src/domain/access/sod.ts). */
  document: string;
  updated_at: string;
  updated_by: string;
}

/** SQLite only (migration 0900): bumped by trigger on every change the decision path caches. */
export interface ReadEpochTable {
  id: number;
  n: number;
}

export interface IdentityTables {
  read_epoch: ReadEpochTable;
  sessions: SessionsTable;
  login_throttle: LoginThrottleTable;
  sod_settings: SodSettingsTable;
}
