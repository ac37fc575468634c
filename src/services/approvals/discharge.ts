// The approval side of one authorize decision, run inside the decision transaction. An approval
// only satisfies the human-approval condition of *this* obligation for *exactly* its action; the
// permit and the policy still decide (spec 4.1 rule 5). Consumption is a conditional update
// `where status = 'approved'`, so of any number of concurrent decisions exactly one consumes it.
import { effectiveStatus, uncoveredField, type RequestFacts } from '../../domain/approval/index.ts';
import type { Dialect, Tx } from '../../store/store.ts';
import { obligationFacts } from './approvals.ts';
import { approverEligibility } from './eligibility.ts';

export type ApprovalCheck =
  | { kind: 'satisfiable' }
  /** The named obligation is this very action and still awaits a person: no new obligation. */
  | { kind: 'pending' }
  | { kind: 'unsatisfied'; detail: string };

export async function checkApproval(trx: Tx, dialect: Dialect, projectId: string, approvalRequestId: string, request: RequestFacts, now: Date): Promise<ApprovalCheck> {
  const row = await trx.selectFrom('approval_requests').selectAll().where('project_id', '=', projectId).where('id', '=', approvalRequestId).executeTakeFirst();
  if (!row) return { kind: 'unsatisfied', detail: `approval_not_satisfied: no approval request ${approvalRequestId} in this project` };
  const status = effectiveStatus(row, now);
  // A closed obligation (consumed, withdrawn, expired, lapsed) says so first: whatever the request,
  // nothing discharges it any more, and "differs in policy_version" would hide that it was spent.
  if (status !== 'pending' && status !== 'approved') return { kind: 'unsatisfied', detail: `approval_not_satisfied: approval request ${row.id} is ${status}` };
  // A lapsed approval (its key retired, its approver no longer one) is closed too: said before any difference.
  if (status === 'approved') {
    const approval = await trx.selectFrom('approvals').select(['key_id', 'grants_upto']).where('approval_request_id', '=', row.id).executeTakeFirst();
    if (!approval) return { kind: 'unsatisfied', detail: `approval_not_satisfied: approval request ${row.id} has no approval` };
    const eligible = await approverEligibility(trx, projectId, approval.key_id, approval.grants_upto, dialect === 'postgres');
    if (!eligible.ok) return { kind: 'unsatisfied', detail: `approval_not_satisfied: approval request ${row.id} is lapsed: ${eligible.detail}` };
  }
  const differs = uncoveredField(obligationFacts(row), request);
  if (differs) return { kind: 'unsatisfied', detail: `approval_not_satisfied: the request differs from approval request ${row.id} in ${differs}` };
  return status === 'pending' ? { kind: 'pending' } : { kind: 'satisfiable' };
}

/** Consumes the approval for `decisionId`; false when another decision (or a revoke) got there first. */
export async function consumeApproval(trx: Tx, approvalRequestId: string, decisionId: string, now: Date): Promise<boolean> {
  const at = now.toISOString();
  const updated = await trx.updateTable('approval_requests').set({ status: 'consumed' })
    .where('id', '=', approvalRequestId).where('status', '=', 'approved').where('expires_at', '>', at).executeTakeFirst();
  if (Number(updated.numUpdatedRows) !== 1) return false;
  await trx.updateTable('approvals').set({ consumed_at: at, consumed_by_decision: decisionId }).where('approval_request_id', '=', approvalRequestId).execute();
  return true;
}
