// Validates a permit payload against the one accepted shape. Issuance runs the same check,
// so Gavel never signs a permit it would refuse. Unknown members are refused: an unknown
// member may be a constraint this version does not enforce, and ignoring it would widen.
import { COMMITMENT_SYNTAX } from './commitment.ts';
import { didKeyIsWellFormed, isDid } from './did.ts';
import {
  MAX_ACTION_LENGTH,
  MAX_ACTIONS,
  MAX_ID_LENGTH,
  MAX_RESOURCE_PATTERN_LENGTH,
  MAX_RESOURCES,
} from './limits.ts';
import { isMoney } from './money.ts';
import { isResourcePattern } from './pattern.ts';
import { isAction as isActionName } from '../policy/formats.ts';
import type { GavelConstraints, PermitClaims, PermitFailure } from './types.ts';
import { fail, shownName } from './types.ts';

const CLAIM_KEYS = new Set(['iss', 'sub', 'aud', 'jti', 'iat', 'nbf', 'exp', 'gavel']);
const GAVEL_KEYS = new Set(['actions', 'resources', 'max_per_request', 'budget', 'max_uses', 'parent']);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isId(v: unknown, max = MAX_ID_LENGTH): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= max;
}

function isSeconds(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

export function isAction(v: unknown): v is string {
  // A request's action, as the policy language reads it (printable ASCII without spaces, docs/permits.md
  // "Format"): another name matches no request, and a delegated link's would reach the console's view
  // with its control or bidi characters. "*" alone means any action; a '*' inside a name would look
  // like a wildcard and is not one.
  return isId(v, MAX_ACTION_LENGTH) && isActionName(v) && (v === '*' || !v.includes('*'));
}

type Checked<T> = { ok: true; value: T } | PermitFailure;

function bad(detail: string): PermitFailure {
  return fail('claims', detail);
}

function checkConstraints(g: unknown): Checked<GavelConstraints> {
  if (!isPlainObject(g)) return bad('the gavel claim must be an object');
  for (const k of Object.keys(g)) if (!GAVEL_KEYS.has(k)) return bad(`unknown member gavel.${shownName(k)}`);
  const { actions, resources, max_per_request, budget, max_uses, parent } = g;
  if (!Array.isArray(actions) || actions.length === 0 || actions.length > MAX_ACTIONS || !actions.every(isAction)) {
    return bad(`gavel.actions must be 1..${MAX_ACTIONS} action names (each at most ${MAX_ACTION_LENGTH} characters, or "*")`);
  }
  if (
    !Array.isArray(resources) ||
    resources.length === 0 ||
    resources.length > MAX_RESOURCES ||
    !resources.every((r) => isResourcePattern(r, MAX_RESOURCE_PATTERN_LENGTH))
  ) {
    return bad(`gavel.resources must be 1..${MAX_RESOURCES} resource:// patterns with '*' only at the end`);
  }
  const out: GavelConstraints = { actions: [...actions], resources: [...resources] };
  if (max_per_request !== undefined) {
    if (!isMoney(max_per_request)) return bad('gavel.max_per_request must be Money {minor, currency}');
    out.max_per_request = { minor: max_per_request.minor, currency: max_per_request.currency };
  }
  if (budget !== undefined) {
    if (!isMoney(budget)) return bad('gavel.budget must be Money {minor, currency}');
    out.budget = { minor: budget.minor, currency: budget.currency };
  }
  // Issuance refuses two currencies in one link; verification must too, or such a link verifies and
  // then denies every request it makes (coverage: currency_mismatch), with no word of why.
  if (out.max_per_request && out.budget && out.max_per_request.currency !== out.budget.currency) {
    return bad(`gavel.max_per_request and gavel.budget must be in one currency (they are in ${out.max_per_request.currency} and ${out.budget.currency})`);
  }
  if (max_uses !== undefined) {
    if (!Number.isSafeInteger(max_uses) || (max_uses as number) < 1) return bad('gavel.max_uses must be a positive integer');
    out.max_uses = max_uses as number;
  }
  if (parent !== undefined) {
    if (typeof parent !== 'string' || !COMMITMENT_SYNTAX.test(parent)) return bad('gavel.parent must be a lowercase SHA-256 hex commitment');
    out.parent = parent;
  }
  return { ok: true, value: out };
}

/** Checks a decoded payload; returns a fresh, fully typed copy. */
export function validateClaims(payload: unknown): Checked<PermitClaims> {
  if (!isPlainObject(payload)) return bad('the payload must be a JSON object');
  for (const k of Object.keys(payload)) if (!CLAIM_KEYS.has(k)) return bad(`unknown claim ${shownName(k)}`);
  const { iss, sub, aud, jti, iat, nbf, exp, gavel } = payload;
  if (!isId(iss, 2048)) return bad('iss must be a non-empty string');
  if (!isDid(sub)) return bad('sub must be a DID');
  if (!didKeyIsWellFormed(sub)) return bad('sub is a did:key that does not name an Ed25519 key');
  if (!isId(aud)) return bad(`aud must be a project id of at most ${MAX_ID_LENGTH} characters`);
  if (!isId(jti)) return bad(`jti must be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  if (!isSeconds(iat) || !isSeconds(nbf) || !isSeconds(exp)) return bad('iat, nbf and exp must be integer Unix seconds');
  if (nbf >= exp) return bad('nbf must be before exp');
  const g = checkConstraints(gavel);
  if (!g.ok) return g;
  return { ok: true, value: { iss, sub, aud, jti, iat, nbf, exp, gavel: g.value } };
}
