// Minting an API key: 256 random bits shown once; only the SHA-256 is stored. The key carries a
// subset of its holder's current roles, so minting never grants a role the holder lacks.
import { randomBytes } from 'node:crypto';
import { API_KEY_PREFIX, hashSecret } from '../../http/auth/api-key.ts';
import { Problem } from '../../http/problem.ts';
import { newMonotonicId } from '../../lib/ids.ts';
import { isRole, type Role } from '../../domain/access/roles.ts';
import { effectiveKeyRoles } from '../../domain/access/api-key-standing.ts';
import type { Db, Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { rolesOf } from './members.ts';

export interface MintedKey { id: string; secret: string; roles: Role[]; name: string; created_at: string }

export async function mintApiKey(trx: Tx, input: { projectId: string; principalId: string; name: string; roles: Role[]; actor: string; at?: Date }): Promise<MintedKey> {
  const member = await trx.selectFrom('memberships').select(['revoked_at', 'last_grant'])
    .where('project_id', '=', input.projectId).where('principal_id', '=', input.principalId).executeTakeFirst();
  if (!member || member.revoked_at) throw new Problem(422, 'not_a_member', 'an API key can only be minted for a current member of the project');
  const held = new Set(await rolesOf(trx, input.projectId, input.principalId));
  const missing = input.roles.filter((r) => !held.has(r));
  if (missing.length > 0) {
    throw new Problem(422, 'role_not_held', `the key's holder does not hold ${missing.join(', ')}; a key carries only roles its holder has`);
  }
  const roles = [...new Set(input.roles)].sort() as Role[];
  const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  // Monotonic: keys are listed by id, and several may be minted in one millisecond.
  const id = newMonotonicId('key');
  const created_at = (input.at ?? new Date()).toISOString();
  // The key counts only its holder's grants numbered up to the holder's latest now (http/auth/api-key.ts):
  // a grant made after it is numbered higher, whatever the clocks say (decision 0201, addendum).
  await trx.insertInto('api_keys').values({
    id, project_id: input.projectId, principal_id: input.principalId, name: input.name, secret_hash: hashSecret(secret),
    roles: JSON.stringify(roles), created_at, created_by: input.actor, revoked_at: null, revoked_by: null, grants_upto: member.last_grant,
  }).execute();
  await recordAudit(trx, { projectId: input.projectId, kind: 'api_key.minted', actor: input.actor, data: { key_id: id, principal_id: input.principalId, roles, name: input.name } });
  return { id, secret, roles, name: input.name, created_at };
}

export interface KeyView { id: string; name: string; principal_id: string; roles: Role[]; effective_roles: Role[]; created_at: string; created_by: string; revoked_at: string | null; revoked_by: string | null }

type KeyRow = { id: string; name: string; principal_id: string; roles: string; created_at: string; created_by: string; revoked_at: string | null; revoked_by: string | null; grants_upto: number };

const KEY_COLUMNS = ['id', 'name', 'principal_id', 'roles', 'created_at', 'created_by', 'revoked_at', 'revoked_by', 'grants_upto'] as const;

/**
 * What each key can do now, by the rule the machine plane authenticates by (domain/access/api-key-standing.ts);
 * `roles` stays what the key was minted with.
 */
async function withEffectiveRoles(db: Db | Tx, projectId: string, rows: KeyRow[]): Promise<KeyView[]> {
  const holders = [...new Set(rows.map((r) => r.principal_id))];
  const [grants, members, disabled] = holders.length === 0 ? [[], [], []] : await Promise.all([
    db.selectFrom('role_grants').select(['principal_id', 'role', 'grant_no']).where('project_id', '=', projectId).where('principal_id', 'in', holders).execute(),
    db.selectFrom('memberships').select('principal_id').where('project_id', '=', projectId).where('principal_id', 'in', holders).where('revoked_at', 'is', null).execute(),
    db.selectFrom('principals').select('id').where('id', 'in', holders).where('disabled_at', 'is not', null).execute(),
  ]);
  const member = new Set(members.map((m) => m.principal_id));
  const off = new Set(disabled.map((d) => d.id));
  return rows.map(({ grants_upto, ...r }) => {
    const minted = JSON.parse(r.roles) as unknown[];
    const effective = effectiveKeyRoles({
      minted, revoked: r.revoked_at !== null, member: member.has(r.principal_id), disabled: off.has(r.principal_id),
      heldSinceKey: new Set(grants.filter((g) => g.principal_id === r.principal_id && g.grant_no <= grants_upto).map((g) => g.role)),
    });
    return { ...r, roles: minted.filter(isRole), effective_roles: effective ?? [] };
  });
}

/**
 * A page of the project's keys, newest first, never the secret (only its hash is stored); `before`
 * is the id of the last key of the previous page, `holder` keeps only the keys bound to that principal.
 */
export async function listApiKeys(db: Db, projectId: string, options: { limit: number; before?: string | undefined; holder?: string }): Promise<KeyView[]> {
  let query = db.selectFrom('api_keys').select(KEY_COLUMNS)
    .where('project_id', '=', projectId);
  if (options.holder !== undefined) query = query.where('principal_id', '=', options.holder);
  if (options.before !== undefined) query = query.where('id', '<', options.before);
  const rows = await query.orderBy('id', 'desc').limit(options.limit).execute();
  return withEffectiveRoles(db, projectId, rows);
}

/** Revokes a key; the next request carrying it, on any instance, gets 401. Idempotent. */
export async function revokeApiKey(trx: Tx, input: { projectId: string; keyId: string; actor: string; at?: Date }): Promise<{ key: KeyView; changed: boolean }> {
  const row = await trx.selectFrom('api_keys').select(['id', 'revoked_at']).where('project_id', '=', input.projectId).where('id', '=', input.keyId).executeTakeFirst();
  if (!row) throw new Problem(404, 'not_found', `no API key ${input.keyId} in this project`);
  let changed = false;
  if (!row.revoked_at) {
    const at = (input.at ?? new Date()).toISOString();
    await trx.updateTable('api_keys').set({ revoked_at: at, revoked_by: input.actor }).where('id', '=', row.id).where('revoked_at', 'is', null).execute();
    await recordAudit(trx, { projectId: input.projectId, kind: 'api_key.revoked', actor: input.actor, data: { key_id: row.id }, at: input.at });
    changed = true;
  }
  const r = await trx.selectFrom('api_keys').select(KEY_COLUMNS).where('id', '=', row.id).executeTakeFirstOrThrow();
  return { key: (await withEffectiveRoles(trx, input.projectId, [r]))[0]!, changed };
}
