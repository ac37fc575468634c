// The separation-of-duties document of a project, and the rules that read it. Pure.
//   { "exclusive_roles": [["ADMIN","POLICY_AUTHOR"]], "four_eyes_policy_activation": true }
// exclusive_roles: pairs no single principal may hold together in the project; ADMIN and
// POLICY_AUTHOR always among them (REQUIRED_PAIR).
// four_eyes_policy_activation: the principal that saved a policy version may not activate it.
import { isRole, ROLES, type Role } from './roles.ts';

export interface SodDocument {
  exclusive_roles: [Role, Role][];
  four_eyes_policy_activation: boolean;
}

/**
 * The pair no document may drop (spec 5.5: ADMIN does not acquire POLICY_AUTHOR by being ADMIN).
 * An ADMIN writes the document, so a pair it could lift is no separation: it would lift it and
 * grant itself the role.
 */
export const REQUIRED_PAIR: readonly [Role, Role] = ['ADMIN', 'POLICY_AUTHOR'];
/** A pair's key whatever its order. */
const pairKey = (pair: readonly unknown[]) => pair.map(String).sort().join('|');
const REQUIRED_KEY = pairKey(REQUIRED_PAIR);

/** Until an ADMIN changes it: ADMIN and POLICY_AUTHOR exclusive; four eyes off (one author may activate). */
export const DEFAULT_SOD: SodDocument = {
  exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']],
  four_eyes_policy_activation: false,
};

export interface SodError { pointer: string; code: string; message: string }

/** Validates an untrusted value; returns the normalized document (each pair and the list sorted) or every error (a repeated pair is one). */
export function validateSod(input: unknown): { ok: true; value: SodDocument } | { ok: false; errors: SodError[] } {
  const errors: SodError[] = [];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, errors: [{ pointer: '', code: 'wrong_type', message: 'must be an object' }] };
  }
  const doc = input as Record<string, unknown>;
  for (const k of Object.keys(doc)) {
    if (k !== 'exclusive_roles' && k !== 'four_eyes_policy_activation') errors.push({ pointer: `/${k}`, code: 'unknown_field', message: 'is not a known field' });
  }
  if (typeof doc.four_eyes_policy_activation !== 'boolean') {
    errors.push({ pointer: '/four_eyes_policy_activation', code: doc.four_eyes_policy_activation === undefined ? 'required' : 'wrong_type', message: 'must be true or false' });
  }
  const pairs: [Role, Role][] = [];
  const raw = doc.exclusive_roles;
  if (!Array.isArray(raw)) {
    errors.push({ pointer: '/exclusive_roles', code: raw === undefined ? 'required' : 'wrong_type', message: 'must be an array of role pairs' });
  } else if (raw.length > 10) {
    errors.push({ pointer: '/exclusive_roles', code: 'too_many', message: 'at most 10 pairs (there are only 10 distinct pairs of roles)' });
  } else {
    const seen = new Set<string>();
    raw.forEach((pair, i) => {
      if (!Array.isArray(pair) || pair.length !== 2) {
        errors.push({ pointer: `/exclusive_roles/${i}`, code: 'wrong_type', message: 'must be a pair of two roles' });
        return;
      }
      let good = true;
      pair.forEach((r, j) => {
        if (!isRole(r)) { good = false; errors.push({ pointer: `/exclusive_roles/${i}/${j}`, code: 'not_allowed', message: `must be one of ${ROLES.join(', ')}` }); }
      });
      if (!good) return;
      if (pair[0] === pair[1]) { errors.push({ pointer: `/exclusive_roles/${i}`, code: 'not_allowed', message: 'a role cannot exclude itself' }); return; }
      const sorted = [...pair].sort() as [Role, Role];
      const key = sorted.join('|');
      if (seen.has(key)) { errors.push({ pointer: `/exclusive_roles/${i}`, code: 'duplicate', message: 'this pair is listed twice' }); return; }
      seen.add(key);
      pairs.push(sorted);
    });
  }
  if (Array.isArray(raw) && raw.length <= 10 && !pairs.some((p) => pairKey(p) === REQUIRED_KEY)) {
    errors.push({ pointer: '/exclusive_roles', code: 'required_pair', message: `must keep ${REQUIRED_PAIR.join(' and ')} apart: ADMIN never acquires POLICY_AUTHOR` });
  }
  if (errors.length > 0) return { ok: false, errors };
  pairs.sort((a, b) => a.join('|').localeCompare(b.join('|')));
  return { ok: true, value: { exclusive_roles: pairs, four_eyes_policy_activation: doc.four_eyes_policy_activation as boolean } };
}

/** A stored document, which may predate REQUIRED_PAIR: validated with the pair added if it lacks it. */
export function validateStoredSod(input: unknown): ReturnType<typeof validateSod> {
  const pairs = (input as { exclusive_roles?: unknown } | null)?.exclusive_roles;
  const lacking = Array.isArray(pairs) && !pairs.some((p) => Array.isArray(p) && pairKey(p) === REQUIRED_KEY);
  return validateSod(lacking ? { ...(input as object), exclusive_roles: [...pairs, [...REQUIRED_PAIR]] } : input);
}

/** The pair that holding `held` plus `adding` would break, or null when the grant is allowed. */
export function sodConflict(sod: SodDocument, held: Iterable<Role>, adding: Role): [Role, Role] | null {
  const have = new Set(held);
  for (const pair of sod.exclusive_roles) {
    const [a, b] = pair;
    if ((adding === a && have.has(b)) || (adding === b && have.has(a))) return pair;
  }
  return null;
}

/**
 * Pairs of `sod` a principal holding `held` already breaks (used when the document changes).
 * `minted`: roles of live keys it minted for others, whose secrets it holds (an ADMIN's): a pair
 * of one role held and one minted is broken too, as minting it would have been refused.
 */
export function sodViolations(sod: SodDocument, held: Iterable<Role>, minted: Iterable<Role> = []): [Role, Role][] {
  const have = new Set(held);
  const keys = new Set(minted);
  return sod.exclusive_roles.filter(([a, b]) => (have.has(a) && (have.has(b) || keys.has(b))) || (have.has(b) && keys.has(a)));
}

/** Four eyes: may `activator` activate a version saved by `savedBy`? */
export function mayActivate(sod: SodDocument, savedBy: string, activator: string): boolean {
  return !sod.four_eyes_policy_activation || savedBy !== activator;
}
