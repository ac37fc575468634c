// A person settles an UNKNOWN by finding out, never by retrying (invariant 6). The first
// resolution stands (invariant 7): a conditional update `where status = 'UNKNOWN'`.
// - another resolver was first, whether its update had committed when the row was read or won the
//   race after: 409 conflict (spec section 3), so the answer does not depend on timing;
// - the row has an outcome no person gave (the merchant's, or it is still in flight): 409 execution_not_unknown.
// The statement is ADMIN's (decision 0403) and stands for good, so it is made under the roles lock with
// ADMIN read again there: one demoted or removed meanwhile settles nothing after that change answered.
import { Problem, notFound } from '../../http/problem.ts';
import { affected, type Store } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { lockAsHolderOf } from '../identity/members.ts';

export interface ResolveInput { projectId: string; executionId: string; outcome: 'SUCCEEDED' | 'FAILED'; note: string; actor: string; at: Date }
export interface ResolvedView { id: string; status: 'SUCCEEDED' | 'FAILED'; resolved_at: string; resolved_by: string; note: string }

export async function resolveExecution(store: Store, input: ResolveInput): Promise<ResolvedView> {
  const row = await store.db.selectFrom('executions').select(['id', 'status', 'resolved_at', 'resolved_by'])
    .where('project_id', '=', input.projectId).where('id', '=', input.executionId).executeTakeFirst();
  if (!row) throw notFound(`no execution ${input.executionId} in this project`);
  if (row.status !== 'UNKNOWN' && row.resolved_at) {
    throw new Problem(409, 'conflict', `another resolver was first (${row.status} by ${row.resolved_by ?? 'unknown'} at ${row.resolved_at}); the first statement stands`,
      { extra: { execution_status: row.status } });
  }
  if (row.status !== 'UNKNOWN') {
    const how = row.status === 'IN_FLIGHT' ? 'the merchant call is still in progress; it becomes UNKNOWN only if no outcome comes'
      : 'an outcome recorded from the merchant';
    throw new Problem(409, 'execution_not_unknown', `execution ${row.id} is ${row.status} (${how}); only an UNKNOWN execution can be resolved`,
      { extra: { execution_status: row.status } });
  }
  const at = input.at.toISOString();
  return store.transaction(async (trx) => {
    await lockAsHolderOf(trx, store, input.projectId, input.actor, ['ADMIN']);
    const n = affected(await trx.updateTable('executions')
      .set({ status: input.outcome, resolved_at: at, resolved_by: input.actor, resolution_note: input.note })
      .where('id', '=', row.id).where('status', '=', 'UNKNOWN').executeTakeFirst());
    if (n !== 1) {
      const now = await trx.selectFrom('executions').select(['status', 'resolved_by', 'resolved_at']).where('id', '=', row.id).executeTakeFirstOrThrow();
      throw new Problem(409, 'conflict', `another resolver was first (${now.status} by ${now.resolved_by ?? 'unknown'} at ${now.resolved_at ?? 'unknown'}); the first statement stands`,
        { extra: { execution_status: now.status } });
    }
    await recordAudit(trx, { projectId: input.projectId, kind: 'execution.resolved', actor: input.actor, at: input.at,
      data: { execution_id: row.id, outcome: input.outcome, note: input.note } });
    return { id: row.id, status: input.outcome, resolved_at: at, resolved_by: input.actor, note: input.note };
  });
}
