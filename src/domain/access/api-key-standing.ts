// What an API key carries now, the one rule the machine plane authenticates by (http/auth/api-key.ts)
// and the console lists keys by (services/identity/api-keys.ts). Pure. PostgreSQL decisions re-check
// its validity half in SQL at commit (services/authorize/recheck.ts, KEY_VALID).
import { isRole, type Role } from './roles.ts';

export interface KeyStanding {
  /** The roles the key was minted with, as stored. */
  minted: readonly unknown[];
  revoked: boolean;
  /** Its holder is a current member of the key's project. */
  member: boolean;
  disabled: boolean;
  /** Roles its holder holds through a grant made before the key, by grant number (a role revoked and granted again does not come back to it). */
  heldSinceKey: ReadonlySet<string>;
}

/** The key's roles now, or null when it is not valid (revoked, its holder gone or disabled). */
export function effectiveKeyRoles(k: KeyStanding): Role[] | null {
  if (k.revoked || !k.member || k.disabled) return null;
  return k.minted.filter(isRole).filter((r) => k.heldSinceKey.has(r));
}
