// Project membership and role grants. Every change takes the project's roles lock first, so two
// ADMINs acting at once are serialized and the "one ADMIN remains" and SoD checks see the truth.
import { sodConflict } from '../../domain/access/sod.ts';
import { isRole, type Role } from '../../domain/access/roles.ts';
import { normalizeName } from '../../domain/access/names.ts';
import { isId, newId } from '../../lib/ids.ts';
import { conflict, forbidden, notFound, Problem } from '../../http/problem.ts';
import { lockFor, type Db, type Store, type Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { endSessionsOf } from './sessions.ts';
import { nameTakenIfUnique } from './register.ts';
import { getSod } from './sod.ts';
import { reauthorizeApiKey } from '../../http/auth/api-key.ts';

export const rolesLock = (projectId: string) => `roles:${projectId}`;

export async function rolesOf(db: Db | Tx, projectId: string, principalId: string): Promise<Role[]> {
  const rows = await db.selectFrom('role_grants').select('role').where('project_id', '=', projectId).where('principal_id', '=', principalId).execute();
  return rows.map((r) => r.role).filter(isRole).sort();
}

/**
 * Takes the roles lock and re-reads, under it, that the actor still holds one of `roles`: its
 * request was authorized before the lock, and one demoted, removed or (a key) revoked meanwhile
 * must change nothing after that, as minting a key re-reads the minter's roles. A person acting
 * from the console gets 403; an API key (the machine plane) the answer machineAuth would now give
 * it (401 revoked, 403 without the role). Internal callers are authorized by their callers.
 */
export async function lockAsHolderOf(trx: Tx, store: Store, projectId: string, actor: string, roles: readonly Role[]): Promise<void> {
  await lockFor(trx, store.dialect, rolesLock(projectId));
  if (isId(actor, 'key')) return reauthorizeApiKey(trx, store.dialect, actor, projectId, roles);
  if (isId(actor, 'prn') && !(await rolesOf(trx, projectId, actor)).some((r) => roles.includes(r))) {
    throw forbidden(`you no longer hold ${roles.join(' or ')} in this project`);
  }
}

/** lockAsHolderOf for ADMIN, which every change of roles and memberships needs. */
export async function lockAsAdmin(trx: Tx, store: Store, projectId: string, actor: string): Promise<void> {
  return lockAsHolderOf(trx, store, projectId, actor, ['ADMIN']);
}

async function requirePrincipal(trx: Tx, principalId: string) {
  const p = await trx.selectFrom('principals').select(['id', 'kind', 'name', 'disabled_at']).where('id', '=', principalId).executeTakeFirst();
  if (!p) throw notFound(`no principal ${principalId}`);
  return p;
}

async function requireMember(trx: Tx, projectId: string, principalId: string) {
  await requirePrincipal(trx, principalId);
  const m = await trx.selectFrom('memberships').select('revoked_at').where('project_id', '=', projectId).where('principal_id', '=', principalId).executeTakeFirst();
  if (!m || m.revoked_at) throw new Problem(422, 'not_a_member', `${principalId} is not a member of this project; add it first`);
}

/**
 * The project's person ADMINs. Only a person administers (the console takes a session, and only a
 * person ADMIN mints keys for others), so a service ADMIN does not keep a project administrable:
 * the last person ADMIN demoting itself after giving ADMIN to a service would revoke the keys it
 * minted, the service's with them, and leave no one who could ever act.
 */
async function personAdminCount(trx: Tx, projectId: string): Promise<number> {
  const row = await trx.selectFrom('role_grants as g')
    .innerJoin('memberships as m', (j) => j.onRef('m.project_id', '=', 'g.project_id').onRef('m.principal_id', '=', 'g.principal_id'))
    .innerJoin('principals as p', 'p.id', 'g.principal_id')
    .select((eb) => eb.fn.countAll<number | string>().as('n')).where('g.project_id', '=', projectId).where('g.role', '=', 'ADMIN').where('m.revoked_at', 'is', null)
    .where('p.kind', '=', 'person').executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Whether taking ADMIN from `principalId` would leave the project without a person ADMIN. */
async function isLastPersonAdmin(trx: Tx, projectId: string, principalId: string): Promise<boolean> {
  const p = await trx.selectFrom('principals').select('kind').where('id', '=', principalId).executeTakeFirst();
  return p?.kind === 'person' && (await personAdminCount(trx, projectId)) <= 1;
}

export interface MemberView { principal_id: string; kind: string; name: string; roles: Role[]; member_since: string }

async function view(trx: Tx | Db, projectId: string, principalId: string): Promise<MemberView> {
  const row = await trx.selectFrom('memberships as m').innerJoin('principals as p', 'p.id', 'm.principal_id')
    .select(['p.id', 'p.kind', 'p.name', 'm.created_at']).where('m.project_id', '=', projectId).where('m.principal_id', '=', principalId).executeTakeFirstOrThrow();
  return { principal_id: row.id, kind: row.kind, name: row.name, roles: await rolesOf(trx, projectId, principalId), member_since: row.created_at };
}

/**
 * Roles of the live keys each principal of the project (or `only` one) minted for other principals,
 * minter → roles: whoever mints a key holds its secret.
 */
export async function rolesOfKeysMintedBy(trx: Tx, projectId: string, only?: string): Promise<Map<string, Set<Role>>> {
  let q = trx.selectFrom('api_keys').select(['created_by', 'roles']).where('project_id', '=', projectId)
    .whereRef('principal_id', '!=', 'created_by').where('revoked_at', 'is', null);
  if (only !== undefined) q = q.where('created_by', '=', only);
  const out = new Map<string, Set<Role>>();
  for (const r of await q.execute()) {
    const roles = out.get(r.created_by) ?? new Set<Role>();
    for (const role of JSON.parse(r.roles) as unknown[]) if (isRole(role)) roles.add(role);
    out.set(r.created_by, roles);
  }
  return out;
}

/** Grants inside an open transaction that already holds the roles lock (SoD checked per role). */
async function grantLocked(trx: Tx, projectId: string, principalId: string, role: Role, actor: string, now: Date): Promise<boolean> {
  const held = await rolesOf(trx, projectId, principalId);
  if (held.includes(role)) return false;
  const sod = await getSod(trx, projectId);
  const pair = sodConflict(sod, held, role);
  if (pair) {
    throw new Problem(409, 'sod_conflict', `the project's separation of duties forbids one principal holding both ${pair[0]} and ${pair[1]}`, { extra: { roles: pair } });
  }
  // Whoever mints a key holds its secret (the mint refuses a role apart from the minter's own): a
  // grant must not make a pair of a role held and one of a key it minted for another.
  const keyPair = sodConflict(sod, [...(await rolesOfKeysMintedBy(trx, projectId, principalId)).get(principalId) ?? []], role);
  if (keyPair) {
    const other = keyPair[0] === role ? keyPair[1] : keyPair[0];
    throw new Problem(409, 'sod_conflict', `the project's separation of duties keeps ${keyPair[0]} and ${keyPair[1]} apart, and this principal holds the secret of a live API key carrying ${other} that it minted for another: revoke that key first`, { extra: { roles: keyPair } });
  }
  // Numbered one past the holder's latest grant, under the roles lock minting takes too: a key
  // counts the grants numbered up to its holder's number when it was minted (api-keys.ts), so a
  // re-grant never reaches an older key, whatever the clocks of the instances involved say.
  const { last_grant } = await trx.updateTable('memberships').set((eb) => ({ last_grant: eb('last_grant', '+', 1) }))
    .where('project_id', '=', projectId).where('principal_id', '=', principalId).returning('last_grant').executeTakeFirstOrThrow();
  await trx.insertInto('role_grants').values({ project_id: projectId, principal_id: principalId, role, granted_at: now.toISOString(), granted_by: actor, grant_no: last_grant }).execute();
  await recordAudit(trx, { projectId, kind: 'role.granted', actor, data: { principal_id: principalId, role }, at: now });
  return true;
}

/** Adds a principal (by id or by name) to the project with `roles`; re-adding a former member starts afresh. */
export async function addMember(store: Store, input: { projectId: string; principalId?: string; name?: string; roles: Role[]; actor: string }, now: Date): Promise<MemberView> {
  return store.transaction(async (trx) => {
    await lockAsAdmin(trx, store, input.projectId, input.actor);
    const p = input.principalId !== undefined
      ? await trx.selectFrom('principals').select(['id', 'disabled_at']).where('id', '=', input.principalId).executeTakeFirst()
      : await trx.selectFrom('principals').select(['id', 'disabled_at']).where('name', '=', normalizeName(input.name ?? '')).executeTakeFirst();
    if (!p) throw notFound('no such principal; a person registers first (POST /v1/console/register)');
    if (p.disabled_at) throw new Problem(422, 'principal_disabled', 'this principal is disabled');
    const m = await trx.selectFrom('memberships').select('revoked_at').where('project_id', '=', input.projectId).where('principal_id', '=', p.id).executeTakeFirst();
    if (m && !m.revoked_at) throw conflict('already a member; grant roles with POST …/members/{principalId}/roles', 'already_member');
    const at = now.toISOString();
    if (m) {
      await trx.updateTable('memberships').set({ revoked_at: null, created_at: at, created_by: input.actor }).where('project_id', '=', input.projectId).where('principal_id', '=', p.id).execute();
    } else {
      await trx.insertInto('memberships').values({ project_id: input.projectId, principal_id: p.id, created_at: at, created_by: input.actor, revoked_at: null }).execute();
    }
    await recordAudit(trx, { projectId: input.projectId, kind: 'member.added', actor: input.actor, data: { principal_id: p.id, roles: [...new Set(input.roles)].sort() }, at: now });
    for (const role of new Set(input.roles)) await grantLocked(trx, input.projectId, p.id, role, input.actor, now);
    return view(trx, input.projectId, p.id);
  });
}

/**
 * Ends a membership: its role grants are deleted, its API keys in the project revoked, and the
 * person's console sessions ended at once. Keys it minted for other principals are revoked too:
 * whoever mints a key holds its secret, so a removed ADMIN keeps none. The last person ADMIN cannot be removed.
 */
export async function revokeMember(store: Store, input: { projectId: string; principalId: string; actor: string }, now: Date): Promise<{ principal_id: string; revoked_at: string; sessions_ended: number; keys_revoked: number }> {
  return store.transaction(async (trx) => {
    await lockAsAdmin(trx, store, input.projectId, input.actor);
    await requireMember(trx, input.projectId, input.principalId);
    const held = await rolesOf(trx, input.projectId, input.principalId);
    if (held.includes('ADMIN') && await isLastPersonAdmin(trx, input.projectId, input.principalId)) {
      throw conflict('a project must keep at least one person ADMIN; grant ADMIN to another person first', 'last_admin');
    }
    const at = now.toISOString();
    await trx.updateTable('memberships').set({ revoked_at: at }).where('project_id', '=', input.projectId).where('principal_id', '=', input.principalId).execute();
    await trx.deleteFrom('role_grants').where('project_id', '=', input.projectId).where('principal_id', '=', input.principalId).execute();
    const keys = await revokeKeys(trx, input, { itsOwn: true }, at);
    const sessions_ended = await endSessionsOf(trx, input.principalId, 'member_revoked', now);
    await recordAudit(trx, { projectId: input.projectId, kind: 'member.revoked', actor: input.actor, data: { principal_id: input.principalId, roles: held, keys_revoked: keys, sessions_ended }, at: now });
    return { principal_id: input.principalId, revoked_at: at, sessions_ended, keys_revoked: keys.length };
  });
}

/**
 * Revokes the project's live API keys that `principalId` minted for other principals and, with
 * `itsOwn`, those it holds; answers their ids.
 */
async function revokeKeys(trx: Tx, input: { projectId: string; principalId: string; actor: string }, which: { itsOwn: boolean }, at: string): Promise<string[]> {
  const id = input.principalId;
  // One statement answering the ids, not a second one binding each: an ADMIN may have minted more
  // keys than a statement may bind (SQLite 32,766 variables, PostgreSQL 65,535).
  const keys = await trx.updateTable('api_keys').set({ revoked_at: at, revoked_by: input.actor })
    .where('project_id', '=', input.projectId).where('revoked_at', 'is', null)
    .where((eb) => (which.itsOwn ? eb.or([eb('principal_id', '=', id), eb('created_by', '=', id)]) : eb.and([eb('created_by', '=', id), eb('principal_id', '!=', id)])))
    .returning('id').execute();
  // In id order, as listed before (the audit event names them).
  return keys.map((k) => k.id).sort();
}

/** Grants a role to a current member; idempotent (changed: false when already held). */
export async function grantRole(store: Store, input: { projectId: string; principalId: string; role: Role; actor: string }, now: Date): Promise<{ member: MemberView; changed: boolean }> {
  return store.transaction(async (trx) => {
    await lockAsAdmin(trx, store, input.projectId, input.actor);
    await requireMember(trx, input.projectId, input.principalId);
    const changed = await grantLocked(trx, input.projectId, input.principalId, input.role, input.actor, now);
    return { member: await view(trx, input.projectId, input.principalId), changed };
  });
}

/** Revokes a role; idempotent. Refused (409 last_admin) when it would leave the project without a person ADMIN. */
export async function revokeRole(store: Store, input: { projectId: string; principalId: string; role: Role; actor: string }, now: Date): Promise<{ member: MemberView; changed: boolean }> {
  return store.transaction(async (trx) => {
    await lockAsAdmin(trx, store, input.projectId, input.actor);
    await requireMember(trx, input.projectId, input.principalId);
    const held = await rolesOf(trx, input.projectId, input.principalId);
    if (!held.includes(input.role)) return { member: await view(trx, input.projectId, input.principalId), changed: false };
    if (input.role === 'ADMIN' && await isLastPersonAdmin(trx, input.projectId, input.principalId)) {
      throw conflict('a project must keep at least one person ADMIN; grant ADMIN to another person first', 'last_admin');
    }
    await trx.deleteFrom('role_grants').where('project_id', '=', input.projectId).where('principal_id', '=', input.principalId).where('role', '=', input.role).execute();
    // Only an ADMIN mints keys for others, and the minter holds their secrets: one that stops being
    // ADMIN loses them, as a member removed does. Its own keys narrow with its roles by themselves.
    const minted = input.role !== 'ADMIN' ? [] : await revokeKeys(trx, input, { itsOwn: false }, now.toISOString());
    await recordAudit(trx, { projectId: input.projectId, kind: 'role.revoked', actor: input.actor, data: { principal_id: input.principalId, role: input.role, ...(minted.length ? { keys_revoked: minted } : {}) }, at: now });
    return { member: await view(trx, input.projectId, input.principalId), changed: true };
  });
}

/** A page of current members, newest membership first; `before` is the last row's `created_at~principal_id`. */
export async function listMembers(db: Db, projectId: string, options: { limit: number; before?: string | undefined }): Promise<MemberView[]> {
  let query = db.selectFrom('memberships as m').innerJoin('principals as p', 'p.id', 'm.principal_id')
    .select(['p.id', 'p.kind', 'p.name', 'm.created_at']).where('m.project_id', '=', projectId).where('m.revoked_at', 'is', null);
  if (options.before !== undefined) {
    const [at = '', id = ''] = options.before.split('~');
    query = query.where((eb) => eb.or([eb('m.created_at', '<', at), eb.and([eb('m.created_at', '=', at), eb('p.id', '<', id)])]));
  }
  const rows = await query.orderBy('m.created_at', 'desc').orderBy('p.id', 'desc').limit(options.limit).execute();
  const ids = rows.map((r) => r.id);
  const grants = ids.length === 0 ? [] : await db.selectFrom('role_grants').select(['principal_id', 'role']).where('project_id', '=', projectId).where('principal_id', 'in', ids).execute();
  return rows.map((r) => ({
    principal_id: r.id, kind: r.kind, name: r.name, member_since: r.created_at,
    roles: grants.filter((g) => g.principal_id === r.id).map((g) => g.role).filter(isRole).sort(),
  }));
}

/** A page of membership records, current and ended, newest first; `before` as for listMembers. */
export async function listMemberships(db: Db, projectId: string, options: { limit: number; before?: string | undefined }) {
  let query = db.selectFrom('memberships as m').innerJoin('principals as p', 'p.id', 'm.principal_id')
    .select(['p.id', 'p.kind', 'p.name', 'm.created_at', 'm.created_by', 'm.revoked_at']).where('m.project_id', '=', projectId);
  if (options.before !== undefined) {
    const [at = '', id = ''] = options.before.split('~');
    query = query.where((eb) => eb.or([eb('m.created_at', '<', at), eb.and([eb('m.created_at', '=', at), eb('p.id', '<', id)])]));
  }
  const rows = await query.orderBy('m.created_at', 'desc').orderBy('p.id', 'desc').limit(options.limit).execute();
  return rows.map((r) => ({ principal_id: r.id, kind: r.kind, name: r.name, created_at: r.created_at, created_by: r.created_by, revoked_at: r.revoked_at, active: r.revoked_at === null }));
}

/** Used by the machine route: a new principal that is a member from the start. */
export async function createMemberPrincipal(store: Store, input: { projectId: string; kind: 'person' | 'service'; name: string; passwordHash: string | null; roles: Role[]; actor: string }, now: Date): Promise<MemberView> {
  const name = normalizeName(input.name);
  // The roles lock orders members made here, not self-registrations, which take no lock; the key
  // that asks is authorized again under it.
  return store.transaction(async (trx) => {
    await lockAsAdmin(trx, store, input.projectId, input.actor);
    const taken = await trx.selectFrom('principals').select('id').where('name', '=', name).executeTakeFirst();
    if (taken) throw conflict('that name is taken; choose another', 'name_taken');
    const id = newId('prn', now.getTime());
    const at = now.toISOString();
    await trx.insertInto('principals').values({ id, kind: input.kind, name, password_hash: input.passwordHash, created_at: at, disabled_at: null }).execute();
    await trx.insertInto('memberships').values({ project_id: input.projectId, principal_id: id, created_at: at, created_by: input.actor, revoked_at: null }).execute();
    await recordAudit(trx, { projectId: input.projectId, kind: 'principal.created', actor: input.actor, data: { principal_id: id, kind: input.kind, name, roles: [...new Set(input.roles)].sort() }, at: now });
    for (const role of new Set(input.roles)) await grantLocked(trx, input.projectId, id, role, input.actor, now);
    return view(trx, input.projectId, id);
  }).catch((e: unknown) => { throw nameTakenIfUnique(e); });
}
