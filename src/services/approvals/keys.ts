// Approval keys: the Ed25519 public keys APPROVERs sign approvals with. Registered per principal
// and project; retired, never deleted (an old approval stays attributable to its key).
import { parseApprovalPublicKey } from '../../domain/approval/index.ts';
import { base64urlEncode } from '../../domain/permit/base64url.ts';
import { conflict, forbidden, notFound, Problem } from '../../http/problem.ts';
import { newMonotonicId } from '../../lib/ids.ts';
import { lockFor, type Db, type Store, type Tx } from '../../store/store.ts';
import type { ApprovalKeysTable } from '../../store/schema/approvals.ts';
import { recordAudit } from '../audit/record.ts';
import { lockAsAdmin, rolesLock, rolesOf } from '../identity/members.ts';

export interface ApprovalKeyView {
  id: string;
  principal_id: string;
  public_key: string;
  name: string | null;
  status: 'live' | 'retired';
  created_at: string;
  created_by: string;
  retired_at: string | null;
  retired_by: string | null;
}

export const keyView = (r: ApprovalKeysTable): ApprovalKeyView => ({
  id: r.id, principal_id: r.principal_id, public_key: r.public_key, name: r.name,
  status: r.retired_at ? 'retired' : 'live', created_at: r.created_at, created_by: r.created_by,
  retired_at: r.retired_at, retired_by: r.retired_by,
});

async function requireMembership(db: Db | Tx, projectId: string, principalId: string): Promise<{ revoked_at: string | null }> {
  const m = await db.selectFrom('memberships').select('revoked_at').where('project_id', '=', projectId).where('principal_id', '=', principalId).executeTakeFirst();
  if (!m) throw notFound(`${principalId} is not a member of this project`);
  return m;
}

/** A page of a principal's approval keys, newest first: at most `limit`, those before the id `before`. */
export async function listApprovalKeys(db: Db, projectId: string, principalId: string, options: { limit: number; before?: string | undefined }): Promise<ApprovalKeyView[]> {
  await requireMembership(db, projectId, principalId);
  let query = db.selectFrom('approval_keys').selectAll().where('project_id', '=', projectId).where('principal_id', '=', principalId);
  if (options.before !== undefined) query = query.where('id', '<', options.before);
  const rows = await query.orderBy('id', 'desc').limit(options.limit).execute();
  return rows.map(keyView);
}

export async function registerApprovalKey(store: Store, input: { projectId: string; principalId: string; publicKey: unknown; name?: string; actor: string }, now: Date): Promise<ApprovalKeyView> {
  const parsed = parseApprovalPublicKey(input.publicKey);
  if (!parsed.ok) {
    throw new Problem(400, 'invalid_request', parsed.detail, { errors: [{ pointer: '/public_key', code: parsed.code, message: parsed.detail }] });
  }
  const publicKey = base64urlEncode(parsed.raw);
  return store.transaction(async (trx) => {
    // Under the roles lock, as every change of roles and memberships: one demoted or removed
    // meanwhile registers nothing after that (the audit log never has a registration after the loss).
    await lockFor(trx, store.dialect, rolesLock(input.projectId));
    const m = await requireMembership(trx, input.projectId, input.principalId);
    if (m.revoked_at) throw new Problem(422, 'not_a_member', `${input.principalId} is no longer a member of this project`);
    if (!(await rolesOf(trx, input.projectId, input.principalId)).includes('APPROVER')) {
      throw new Problem(422, 'not_an_approver', `${input.principalId} does not hold APPROVER; grant the role before registering an approval key`);
    }
    const row: ApprovalKeysTable = {
      id: newMonotonicId('apk'), project_id: input.projectId, principal_id: input.principalId, public_key: publicKey,
      name: input.name ?? null, created_at: now.toISOString(), created_by: input.actor, retired_at: null, retired_by: null,
    };
    // On the unique index, not a read before: two registrations at once (PostgreSQL) both read none.
    const inserted = await trx.insertInto('approval_keys').values(row)
      .onConflict((oc) => oc.columns(['project_id', 'public_key']).doNothing()).returning('id').executeTakeFirst();
    if (!inserted) {
      const existing = await trx.selectFrom('approval_keys').select('id').where('project_id', '=', input.projectId).where('public_key', '=', publicKey).executeTakeFirstOrThrow();
      throw conflict(`this public key is already registered as ${existing.id} (a retired key is never registered again)`, 'approval_key_exists');
    }
    await recordAudit(trx, { projectId: input.projectId, kind: 'approval_key.registered', actor: input.actor, at: now, data: { key_id: row.id, principal_id: row.principal_id, public_key: publicKey } });
    return keyView(row);
  });
}

/**
 * Retires a key: its owner may, and an ADMIN any key. `actor` is the person retiring it (the
 * console's); `heldAdmin`, whether it held ADMIN when its request was authenticated.
 */
export async function retireApprovalKey(store: Store, input: { projectId: string; keyId: string; actor: string; heldAdmin: boolean }, now: Date): Promise<ApprovalKeyView> {
  return store.transaction(async (trx) => {
    const key = await trx.selectFrom('approval_keys').selectAll().where('project_id', '=', input.projectId).where('id', '=', input.keyId).executeTakeFirst();
    if (!key) throw notFound(`no approval key ${input.keyId} in this project`);
    if (key.principal_id !== input.actor) {
      if (!input.heldAdmin) throw forbidden('only an ADMIN or the key\'s owner may retire an approval key');
      // ADMIN is what permits this one: read again under the roles lock, as registration reads
      // APPROVER, so an ADMIN demoted or removed meanwhile retires nothing of another's after that.
      await lockAsAdmin(trx, store, input.projectId, input.actor);
    }
    const at = now.toISOString();
    const updated = await trx.updateTable('approval_keys').set({ retired_at: at, retired_by: input.actor })
      .where('id', '=', key.id).where('retired_at', 'is', null).returningAll().executeTakeFirst();
    if (!updated) {
      // Retired since the read above (another instance, on PostgreSQL): say when from the row as it is now.
      const retiredAt = key.retired_at ?? (await trx.selectFrom('approval_keys').select('retired_at').where('id', '=', key.id).executeTakeFirstOrThrow()).retired_at;
      throw conflict(`approval key ${key.id} was already retired at ${retiredAt}`, 'approval_key_retired');
    }
    await recordAudit(trx, { projectId: input.projectId, kind: 'approval_key.retired', actor: input.actor, at: now, data: { key_id: key.id, principal_id: key.principal_id } });
    return keyView(updated);
  });
}
