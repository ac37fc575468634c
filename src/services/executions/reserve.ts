// The execution's reservation, inside the decision transaction once the decision is ALLOW: the
// unique (project_id, nonce) index is the atomic second check. Losing it throws NonceTaken, which
// rolls the whole decision back (spend, obligation, audit event): the loser decided nothing.
import type { Tx } from '../../store/store.ts';
import { fixedSql, queryFixed, type SqlTarget } from '../../store/fixed-sql.ts';
import { recordAudit } from '../audit/record.ts';
import { NonceTaken } from './errors.ts';
import { parseJsonExactly } from '../../lib/json-parse.ts';

// Fixed SQL: this runs in every decision with an execution (store/fixed-sql.ts).
const RESERVE = fixedSql(`insert into executions (id, project_id, nonce, fingerprint, decision_id, decision_audit_id,
  policy_version, agent, action, resource, merchant, operation, status, note, http_status, instance_id, created_at,
  completed_at, resolved_at, resolved_by, resolution_note)
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'IN_FLIGHT', null, null, ?, ?, null, null, null, null)
  on conflict (project_id, nonce) do nothing returning id`);

const TAKEN = fixedSql('select 1 from executions where project_id = ? and nonce = ?');

/**
 * A DENY or REQUIRE_APPROVAL for a call whose nonce a concurrent request has already reserved is
 * that request's repeat, and often decided so because of it (its ALLOW spent the permit's last use
 * or budget, or consumed the approval this one named): it throws NonceTaken, so it rolls back and
 * is answered as the repeat it is (execution_in_progress or REPLAY), as it would have been had it
 * come a moment later, instead of a DENY saying nothing was called (spec 2.4) of a call that was,
 * or another obligation for it. On PostgreSQL the winner has committed by the time this reads when
 * its commit decided this one: this transaction waited on its locks of the counters or obligation.
 */
export async function refuseTakenNonce(trx: Tx, r: ExecutionReservation, projectId: string, env: SqlTarget): Promise<void> {
  if ((await queryFixed(trx, env, TAKEN, [projectId, r.nonce])).length > 0) throw new NonceTaken();
}

export interface ExecutionReservation {
  executionId: string;
  instanceId: string;
  nonce: string;
  fingerprint: string;
  /** The call itself, RFC 8785 text of {merchant, operation, payload}: what an obligation states and an approval covers. */
  call: string;
  merchant: string;
  operation: string;
  agent: string;
  action: string;
  resource: string;
}

export async function reserveExecution(trx: Tx, r: ExecutionReservation, decision: { decision_id: string; audit_id: string; policy_version: number | null },
  ctx: { projectId: string; actor: string; now: Date }, env: SqlTarget): Promise<void> {
  const inserted = await queryFixed(trx, env, RESERVE, [
    r.executionId, ctx.projectId, r.nonce, r.fingerprint, decision.decision_id, decision.audit_id, decision.policy_version,
    r.agent, r.action, r.resource, r.merchant, r.operation, r.instanceId, ctx.now.toISOString(),
  ]);
  if (inserted.length === 0) throw new NonceTaken();
  await recordAudit(trx, {
    projectId: ctx.projectId, kind: 'execution.started', actor: ctx.actor, at: ctx.now,
    data: { execution_id: r.executionId, decision_id: decision.decision_id, merchant: r.merchant, operation: r.operation, nonce: r.nonce, fingerprint: r.fingerprint, payload: (parseJsonExactly(r.call) as { payload: unknown }).payload },
  }, env);
}
