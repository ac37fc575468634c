// Most decisions commit as one statement, not the transaction's several (decision 0012).
//
// The plan's outcome is computed as if every check made under the commit passes:
// - the agent is known and not frozen;
// - no commitment of the chain is revoked;
// - the cached key context and policy pointer are current: on PostgreSQL the key's validity and
//   the pointer (as recheck.ts checks them), on SQLite the read epoch.
// One statement makes those checks and inserts the decision's audit event only if they all hold.
// If any check differs, nothing was written and the transaction (commit.ts) decides. It records
// what the checks found (a frozen agent, a revoked permit), creates an agent seen for the first
// time, or throws StaleReadEpoch.
// - PostgreSQL: an autocommit statement, durable when it returns (synchronous_commit is on). It
//   locks the agent's row FOR SHARE, as the transaction does. It saves three round trips, each of
//   which wakes a backend.
// - SQLite: a statement inside the writer's batch, with no savepoint around it: a single statement
//   is atomic on its own. It replaces five (the unit's savepoint and its release, the epoch, the
//   agent's lock, the audit INSERT).
//
// Only decisions whose transaction would write nothing else qualify: no budget or use count to
// spend, no approval to consume or obligation to open, no execution to reserve.
import { combine, type Combined } from '../../domain/decision/combine.ts';
import { newId } from '../../lib/ids.ts';
import { fixedSql, runFixed, type FixedSql, type SqlTarget } from '../../store/fixed-sql.ts';
import { CHECKED_AT_COMMIT, EPOCH_IS } from '../../store/read-epoch.ts';
import type { Db, Tx } from '../../store/store.ts';
import { auditEventRow, recordAuditIf } from '../audit/record.ts';
import { revokedColumn, revokedExists } from '../permits/permits.ts';
import { decisionEvent, type DecisionPlan } from './commit.ts';
import type { DecisionRecord } from './authorize.ts';
import { KEY_VALID, POINTER } from './recheck.ts';

// PostgreSQL. Parameters, in text order: project and agent (the lock); key id, project (key),
// project (pointer), the chain's commitments; the event's columns; the policy version planned under.
const POSTGRES: FixedSql[] = [];
const postgresStatement = (n: number) => (POSTGRES[n] ??= fixedSql(`with a as (
    select frozen_at from agents where project_id = ? and did = ? for share
  ), c as (
    select exists (select 1 from a) as known, (select frozen_at from a) as frozen_at,
      ${KEY_VALID}, ${POINTER}${n ? `, ${revokedColumn(n)}` : ', false as revoked'}
  ), ins as (
    insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index)
    select ?, ?, ?, ?, ?, ?, null from c
    where c.known and c.frozen_at is null and c.key_valid and not c.revoked
      and c.policy_version is not distinct from ?
    returning id
  )
  select (select id from ins) as inserted`, { prepared: true }));

// SQLite: the condition of the INSERT (audit/record.ts, recordAuditIf). Parameters: the read epoch
// planned under, project and agent, the chain's commitments.
const SQLITE: string[] = [];
const sqliteCondition = (n: number) => (SQLITE[n] ??= `${EPOCH_IS} = ?
  and exists (select 1 from agents where project_id = ? and did = ? and frozen_at is null)${n ? `
  and not ${revokedExists(n)}` : ''}`);

/** The plan's outcome if every check under the commit passes, when nothing but its event would be written. */
function eligibleOutcome(plan: DecisionPlan): Combined | undefined {
  if (plan.epoch === undefined || plan.execution) return undefined;
  const combined = combine({ frozen: false, permitFailure: plan.failure, policy: plan.policy, approvalSatisfied: false });
  if (combined.decision === 'DENY') return combined;
  return combined.decision === 'ALLOW' && (plan.permit?.counters.length ?? 0) === 0 ? combined : undefined;
}

/** Whether the plan's transaction would write nothing but its audit event (see above). */
export const oneStatementEligible = (plan: DecisionPlan): boolean => eligibleOutcome(plan) !== undefined;

/**
 * The decision, committed by one statement; undefined if a check differs (nothing was written).
 * PostgreSQL: `db` outside any transaction. SQLite: `env.raw`, inside the writer's transaction.
 */
export async function commitInOneStatement(db: Db | Tx, env: SqlTarget, plan: DecisionPlan): Promise<DecisionRecord | undefined> {
  const combined = eligibleOutcome(plan);
  if (!combined) return undefined;
  const { event, record } = decisionEvent(plan, combined, newId('dec'), undefined);
  const row = auditEventRow(event);
  const chain = !plan.failure && plan.permit ? plan.permit.chain : [];
  if (env.raw) {
    if (typeof plan.epoch !== 'number') return undefined;
    const inserted = recordAuditIf(env.raw, row, sqliteCondition(chain.length), [plan.epoch, plan.projectId, plan.input.agent, ...chain]);
    return inserted ? { ...record, audit_id: row.id } : undefined;
  }
  if (plan.epoch !== CHECKED_AT_COMMIT) return undefined;
  const [result] = await runFixed<{ inserted: string | null }>(db, 'postgres', postgresStatement(chain.length), [
    plan.projectId, plan.input.agent,
    plan.actor, plan.projectId, plan.projectId, ...chain,
    row.id, row.project_id, row.kind, row.actor, row.created_at, row.data,
    plan.policyVersion,
  ]);
  return result?.inserted === row.id ? { ...record, audit_id: row.id } : undefined;
}
