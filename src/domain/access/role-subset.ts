// A key, a grant or a request carries roles; these say which of them the holder lacks. Pure.
import type { Role } from './roles.ts';

/** Roles in `requested` that `held` does not contain, in request order, without repeats. */
export function missingRoles(requested: readonly Role[], held: Iterable<Role>): Role[] {
  const have = new Set(held);
  return [...new Set(requested)].filter((r) => !have.has(r));
}

/** Roles a key may exercise now: those it was minted with that its holder still holds. */
export function effectiveRoles(keyRoles: readonly Role[], held: Iterable<Role>): Role[] {
  const have = new Set(held);
  return keyRoles.filter((r) => have.has(r));
}
