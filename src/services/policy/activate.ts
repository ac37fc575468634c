// Activating a policy version. One transaction, under the project's policy lock, moves the
// pointer row, the states of the old and new versions, and writes `policy.activated`. A refusal
// (missing role, four-eyes, unknown version, already active, a stored version that fails the checks
// a decision makes when it loads it, a body that is not a valid request from an authenticated
// caller) changes nothing and is audited as `policy.activation_refused` in
// its own committed transaction before the caller hears of it.
import type { Role } from '../../domain/access/roles.ts';
import { Problem } from '../../http/problem.ts';
import { lockFor, type Store, type Tx } from '../../store/store.ts';
import { lockAsHolderOf } from '../identity/members.ts';
import { recordAudit } from '../audit/record.ts';
import { storedIntact } from './active.ts';
import { policyLock } from './save.ts';
import { fourEyesRequired } from './sod.ts';

export type ActivationRefusal = 'role_missing' | 'four_eyes' | 'version_not_found' | 'already_active' | 'integrity_failed' | 'invalid_request';

export interface ActivateInput {
  projectId: string;
  principalId: string;
  actor: string;
  roles: ReadonlySet<Role>;
  /** null when the request carried no usable version (only possible for a role refusal). */
  version: number | null;
  /**
   * The clock, read when the outcome is recorded: for an activation once it holds the project's
   * policy lock, so concurrent activations record times in the order they took effect (a version
   * was recorded retired before it was activated when each took its time on arrival).
   */
  now: () => Date;
}

export interface Activated {
  version: number;
  hash: string;
  state: 'active';
  activated_at: string;
  activated_by: string;
  /** The version this one replaced (now retired), or null. */
  previous_version: number | null;
}

const PROBLEMS: Record<ActivationRefusal, (version: number | null) => Problem> = {
  role_missing: () => new Problem(403, 'forbidden', 'activating a policy needs the POLICY_AUTHOR role, which this caller does not hold (no other role implies it, ADMIN included)'),
  four_eyes: (v) => new Problem(403, 'four_eyes_required', `version ${v} was saved by you; this project requires a different POLICY_AUTHOR to activate it`),
  version_not_found: (v) => new Problem(404, 'policy_version_not_found', `policy version ${v} does not exist in this project`),
  already_active: (v) => new Problem(409, 'already_active', `policy version ${v} is already the active version`),
  // Stored data damaged, not a wrong request: a 500, as SodIntegrityError (decision 0202 addendum).
  integrity_failed: (v) => new Problem(500, 'policy_integrity', `stored policy version ${v} no longer matches what was saved (it does not validate or does not match its hash), so every decision under it would fail closed; the active version is unchanged. Save the document again as a new version`),
  // The route answers with the body's own problem (its field errors); this one only stands in.
  invalid_request: () => new Problem(400, 'invalid_request', 'the activation request is not valid'),
};

/** Records the refusal in its own committed transaction, then returns the problem to throw. */
export async function refuseActivation(store: Store, input: ActivateInput, reason: ActivationRefusal): Promise<Problem> {
  await store.transaction(async (trx) => {
    await recordAudit(trx, {
      projectId: input.projectId, kind: 'policy.activation_refused', actor: input.actor, at: input.now(),
      data: { version: input.version, reason, principal: input.principalId, roles: [...input.roles].sort() },
    });
  });
  return PROBLEMS[reason](input.version);
}

/**
 * Takes the project's roles lock (after the policy lock: nothing takes them the other way round)
 * and re-reads, under it, that the caller still holds POLICY_AUTHOR: the SoD document (four-eyes)
 * is saved, and roles taken away, under that lock. Without it an activation that had read both,
 * then waited, committed after a change that forbade it had committed and answered. A key revoked
 * meanwhile (or its holder removed) gets the 401 machineAuth would now give it; one that lost the
 * role, the audited 403 a caller without it gets.
 */
async function stillAuthor(trx: Tx, store: Store, input: ActivateInput): Promise<boolean> {
  try { await lockAsHolderOf(trx, store, input.projectId, input.actor, ['POLICY_AUTHOR']); } catch (e) {
    if (e instanceof Problem && e.status === 403) return false;
    throw e;
  }
  return true;
}

export async function activatePolicyVersion(store: Store, input: ActivateInput): Promise<Activated> {
  if (!input.roles.has('POLICY_AUTHOR') || input.version === null) throw await refuseActivation(store, input, 'role_missing');
  const version = input.version;
  // Checked before the lock (up to ~100 ms for 10,000 rules, like a save's validation). Under the
  // lock the row must still hold the text checked: a version never changes, so one that did is damaged.
  const checked = await store.db.selectFrom('policy_versions').select(['document', 'hash'])
    .where('project_id', '=', input.projectId).where('version', '=', version).executeTakeFirst();
  const checkedIntact = checked !== undefined && storedIntact(checked.document, checked.hash);
  const outcome = await store.transaction(async (trx): Promise<Activated | ActivationRefusal> => {
    await lockFor(trx, store.dialect, policyLock(input.projectId));
    if (!(await stillAuthor(trx, store, input))) return 'role_missing';
    const when = input.now();
    const at = when.toISOString();
    const row = await trx.selectFrom('policy_versions').select(['version', 'document', 'hash', 'state', 'created_by'])
      .where('project_id', '=', input.projectId).where('version', '=', version).executeTakeFirst();
    if (!row || !checked) return 'version_not_found'; // not there when checked: saved since, by a guess
    const current = await trx.selectFrom('policy_active').select(['version']).where('project_id', '=', input.projectId).executeTakeFirst();
    const previous = current ? Number(current.version) : null;
    if (previous === version) return 'already_active';
    if (row.created_by === input.principalId && (await fourEyesRequired(trx, input.projectId))) return 'four_eyes';
    if (!checkedIntact || row.document !== checked.document || row.hash !== checked.hash) return 'integrity_failed';

    if (previous !== null) {
      await trx.updateTable('policy_versions').set({ state: 'retired', retired_at: at })
        .where('project_id', '=', input.projectId).where('version', '=', previous).execute();
    }
    await trx.updateTable('policy_versions').set({ state: 'active', activated_at: at, activated_by: input.principalId, retired_at: null })
      .where('project_id', '=', input.projectId).where('version', '=', version).execute();
    await trx.insertInto('policy_active')
      .values({ project_id: input.projectId, version, hash: row.hash, activated_at: at, activated_by: input.principalId })
      .onConflict((oc) => oc.column('project_id').doUpdateSet({ version, hash: row.hash, activated_at: at, activated_by: input.principalId }))
      .execute();
    await recordAudit(trx, {
      projectId: input.projectId, kind: 'policy.activated', actor: input.actor, at: when,
      data: { version, hash: row.hash, previous_version: previous, principal: input.principalId, saved_by: row.created_by },
    });
    return { version, hash: row.hash, state: 'active', activated_at: at, activated_by: input.principalId, previous_version: previous };
  });
  if (typeof outcome === 'string') throw await refuseActivation(store, input, outcome);
  return outcome;
}
