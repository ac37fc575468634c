// The execution's reservation, inside the decision transaction once the decision is ALLOW: the
// unique (project_id, nonce) index is the atomic second check. Losing it throws NonceTaken, which
// rolls the whole decision back (spend, audit event, decision row): the loser decided nothing.
import type { Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { NonceTaken } from './errors.ts';

export interface ExecutionReservation {
  executionId: string;
  instanceId: string;
  nonce: string;
  fingerprint: string;
  merchant: string;
  operation: string;
  agent: string;
  action: string;
  resource: string;
}

export async function reserveExecution(trx: Tx, r: ExecutionReservation, decision: { decision_id: string; audit_id: string; policy_version: number | null },
  ctx: { projectId: string; actor: string; now: Date }): Promise<void> {
  const inserted = await trx.insertInto('executions').values({
    id: r.executionId, project_id: ctx.projectId, nonce: r.nonce, fingerprint: r.fingerprint, decision_id: decision.decision_id,
    decision_audit_id: decision.audit_id, policy_version: decision.policy_version, agent: r.agent, action: r.action,
    resource: r.resource, merchant: r.merchant, operation: r.operation, status: 'IN_FLIGHT', note: null,
    http_status: null, instance_id: r.instanceId, created_at: ctx.now.toISOString(), completed_at: null,
    resolved_at: null, resolved_by: null, resolution_note: null,
  }).onConflict((oc) => oc.columns(['project_id', 'nonce']).doNothing()).returning('id').executeTakeFirst();
  if (!inserted) throw new NonceTaken();
  await recordAudit(trx, {
    projectId: ctx.projectId, kind: 'execution.started', actor: ctx.actor, at: ctx.now,
    data: { execution_id: r.executionId, decision_id: decision.decision_id, merchant: r.merchant, operation: r.operation, nonce: r.nonce, fingerprint: r.fingerprint },
  });
}
