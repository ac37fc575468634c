// Machine-route authentication: `authorization: Bearer <API key>`. The key is looked up by the
// SHA-256 of its secret; its roles are intersected with the holder's *current* grants on every
// request, so revoking a key, a membership or a role takes effect on the next call everywhere.
// Only grants made before the key count: a role revoked and granted again reaches keys minted after
// the new grant, not the old ones (which may be why it was revoked). Made before is judged by the
// numbers the database gives grants and keys under the roles lock, not by clocks (decision 0201, addendum).
import { hash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { permits, type Role } from '../../domain/access/roles.ts';
import { effectiveKeyRoles } from '../../domain/access/api-key-standing.ts';
import { fixedSql, readFixed, runFixed, type FixedSql } from '../../store/fixed-sql.ts';
import { CHECKED_AT_COMMIT, readEpoch } from '../../store/read-epoch.ts';
import type { Dialect, Store, Tx } from '../../store/store.ts';
import { bearerUnauthorized, forbidden } from '../problem.ts';
import type { AuthContext } from '../deps.ts';

export const API_KEY_PREFIX = 'gvl_';
const KEY_RE = /^gvl_[A-Za-z0-9_-]{43}$/;

export const hashSecret = (secret: string): string => hash('sha256', secret, 'hex');

interface KeyRow {
  id: string; project_id: string; principal_id: string; roles: string; revoked_at: string | null;
  membership_revoked_at: string | null; is_member: number | null; disabled_at: string | null; held: string | null;
}

// The hot path's one query, as fixed SQL (building it with the query builder on every request cost
// more than running it). Correlated subqueries, not joins: SQLite runs this form several times
// faster (one index probe each), and PostgreSQL plans both alike.
const KEY_LOOKUP = (agg: string, by: 'k.secret_hash' | 'k.id') => `select k.id, k.project_id, k.principal_id, k.roles, k.revoked_at,
  (select m.revoked_at from memberships m where m.project_id = k.project_id and m.principal_id = k.principal_id) as membership_revoked_at,
  (select 1 from memberships m where m.project_id = k.project_id and m.principal_id = k.principal_id) as is_member,
  (select p.disabled_at from principals p where p.id = k.principal_id) as disabled_at,
  (select ${agg} from role_grants g where g.project_id = k.project_id and g.principal_id = k.principal_id and g.grant_no <= k.grants_upto) as held
  from api_keys k where ${by} = ?`;
const keyLookupSql = (by: 'k.secret_hash' | 'k.id'): FixedSql => ({
  sqlite: fixedSql(KEY_LOOKUP("group_concat(g.role, ',')", by)).sqlite,
  postgres: fixedSql(KEY_LOOKUP("string_agg(g.role, ',')", by), { prepared: true }).postgres,
});
const KEY_LOOKUP_SQL = keyLookupSql('k.secret_hash');
const KEY_BY_ID_SQL = keyLookupSql('k.id');

async function keyLookup(store: Store, secretHash: string): Promise<KeyRow | undefined> {
  return (await readFixed<KeyRow>(store, KEY_LOOKUP_SQL, [secretHash]))[0];
}

// SQLite: contexts by authorization header, each tagged with the read epoch read before its
// lookup (store/read-epoch.ts). A change to any key, membership, principal or role grant bumps the
// epoch, so an entry is used only while nothing it was built from can have changed. Failures are
// not cached. The context carries the epoch it was validated at, for the decision path's own cache.
// PostgreSQL has no epoch: every call here looks the key up, and the cache keeps what it found,
// tagged CHECKED_AT_COMMIT, for decisions alone (cachedApiKeyContext).
const MAX_CACHED = 1024;
const cached = new WeakMap<Store, Map<string, AuthContext>>();

function cacheOf(store: Store): Map<string, AuthContext> {
  let entries = cached.get(store);
  if (!entries) cached.set(store, entries = new Map());
  return entries;
}

function remember(entries: Map<string, AuthContext>, header: string, auth: AuthContext): void {
  entries.delete(header);
  if (entries.size >= MAX_CACHED) entries.delete(entries.keys().next().value!);
  entries.set(header, auth);
}

/** Resolves a bearer key to its caller, or throws 401. Does not check roles. */
export async function authenticateApiKey(store: Store, header: string | undefined): Promise<AuthContext> {
  if (header === undefined) return lookUpApiKey(store, header);
  const epoch = await readEpoch(store);
  const entries = cacheOf(store);
  const hit = entries.get(header);
  if (epoch !== undefined && hit && hit.epoch === epoch) return hit;
  let auth: AuthContext;
  try {
    auth = await lookUpApiKey(store, header);
  } catch (error) {
    entries.delete(header);
    throw error;
  }
  const tagged = Object.freeze({ ...auth, epoch: epoch ?? CHECKED_AT_COMMIT });
  remember(entries, header, tagged);
  // PostgreSQL: answered as looked up just now; the tagged copy is for decisions, which check it at commit.
  return epoch === undefined ? auth : tagged;
}

/**
 * The cached context for this header, returned without validating it (undefined if none: then
 * authenticateApiKey). Only for a caller whose own transaction checks it before it writes anything
 * and asks again on a mismatch (the decision: SQLite compares the context's epoch, PostgreSQL
 * re-reads the key's validity; store/read-epoch.ts, services/authorize/commit.ts). Synchronous, so
 * the decision's hook passes without a promise.
 */
export function cachedApiKeyContext(store: Store, header: string | undefined): AuthContext | undefined {
  return header !== undefined ? cached.get(store)?.get(header) : undefined;
}

async function lookUpApiKey(store: Store, header: string | undefined): Promise<AuthContext> {
  if (!header) throw bearerUnauthorized('missing authorization header; send "authorization: Bearer <API key>"', false);
  // One or more spaces after the scheme (RFC 9110 §11.4, RFC 6750 §2.1: "Bearer" 1*SP b64token).
  const match = /^Bearer +([^\s]+)$/i.exec(header.trim());
  if (!match || !KEY_RE.test(match[1]!)) throw bearerUnauthorized('the authorization header does not carry a well-formed API key; send "authorization: Bearer <API key>", the secret (gvl_…) minted by POST /v1/console/projects/{projectId}/api-keys', match !== null);
  return keyContext(await keyLookup(store, hashSecret(match[1]!)));
}

function keyContext(row: KeyRow | undefined): AuthContext {
  // What makes a key valid. PostgreSQL decisions re-check the same rule in SQL at commit
  // (services/authorize/recheck.ts, KEY_VALID): a change here must be made there too.
  const keyRoles = row ? effectiveKeyRoles({
    minted: JSON.parse(row.roles) as unknown[], revoked: row.revoked_at !== null, member: Boolean(row.is_member) && !row.membership_revoked_at,
    disabled: row.disabled_at !== null, heldSinceKey: new Set((row.held ?? '').split(',').filter(Boolean)),
  }) : null;
  if (!row || keyRoles === null) {
    throw bearerUnauthorized('the API key is not valid (unknown, revoked, or its holder is no longer a member)', true);
  }
  // Frozen: on SQLite one context serves every request with this key until the epoch moves.
  return Object.freeze({
    kind: 'api_key', projectId: row.project_id, principalId: row.principal_id,
    roles: new Set<Role>(keyRoles), keyId: row.id, actor: row.id,
  });
}

/** 403 unless the key belongs to `projectId` (when given) and carries one of `roles` (none: any key). */
function requireKeyRoles(auth: AuthContext, projectId: string | undefined, roles: readonly Role[]): void {
  if (projectId !== undefined && projectId !== auth.projectId) {
    // The key's own project is its holder's to know; naming it shows a $PROJECT left unset (`null`) or stale at once.
    throw forbidden(`this API key belongs to project ${auth.projectId}, not to the one the path names (${JSON.stringify(projectId.slice(0, 64))})`);
  }
  if (!permits(auth.roles, roles)) {
    throw forbidden(`this route needs one of the roles ${roles.join(', ')}; the key carries ${[...auth.roles].join(', ') || 'none'}`);
  }
}

/**
 * Authorizes key `keyId` again inside `trx`, by the rule machineAuth applied when the request
 * arrived, for a route whose transaction holds a lock that changes of keys and roles take too: a
 * key revoked (401) or left without the role (403) while its request waited on that lock then
 * changes nothing, as if the request had come after.
 */
export async function reauthorizeApiKey(trx: Tx, dialect: Dialect, keyId: string, projectId: string, roles: readonly Role[]): Promise<void> {
  const [row] = await runFixed<KeyRow>(trx, dialect, KEY_BY_ID_SQL, [keyId]);
  requireKeyRoles(keyContext(row), projectId, roles);
}

/**
 * preValidation hook for `/v1/projects/{projectId}/…` machine routes. `roles` empty means any valid key
 * of the project; otherwise the key must carry one of them (403 `forbidden` if it does not).
 */
export function machineAuth(roles: readonly Role[] = []) {
  // requiredRoles: read by the OpenAPI document (http/openapi-roles.ts); the check uses `roles`.
  return Object.assign(async function requireApiKey(request: FastifyRequest): Promise<void> {
    const auth = await authenticateApiKey(request.server.gavel.store, request.headers.authorization);
    requireKeyRoles(auth, (request.params as { projectId?: string } | undefined)?.projectId, roles);
    request.auth = auth;
  }, { requiredRoles: [...roles] as readonly Role[] });
}
