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
//   which wakes a backend. Decisions that arrive together share it: one statement writes all their
//   events, each only if its own checks hold (store/batched-statement.ts, decision 0013).
// - SQLite: a statement inside the writer's batch, with no savepoint around it: a single statement
//   is atomic on its own. It replaces five (the unit's savepoint and its release, the epoch, the
//   agent's lock, the audit INSERT).
//
// Only decisions whose transaction would write nothing else qualify: no budget or use count to
// spend, no approval to consume or obligation to open, no execution to reserve.
import { combine, type Combined } from '../../domain/decision/combine.ts';
import { newId } from '../../lib/ids.ts';
import { BatchedStatement } from '../../store/batched-statement.ts';
import { fixedSql, runFixed, type SqlTarget } from '../../store/fixed-sql.ts';
import { CHECKED_AT_COMMIT, EPOCH_IS } from '../../store/read-epoch.ts';
import type { Db, Tx } from '../../store/store.ts';
import { auditEventRow, recordAuditIf } from '../audit/record.ts';
import { revokedAmong, revokedExists } from '../permits/permits.ts';
import { decisionEvent, type DecisionPlan } from './commit.ts';
import type { DecisionRecord } from './authorize.ts';
import { activeVersion, keyValid } from './recheck.ts';

// PostgreSQL: any number of decisions, one row each in parallel arrays (unnest keeps them
// aligned). A row's event is inserted only if its agent is known and not frozen (its row locked
// FOR SHARE), its key still valid, the policy pointer still at the version planned under, and no
// commitment of its chain (comma-separated: commitments are hex) revoked. Answers the ids inserted.
const POSTGRES_MANY = fixedSql(`with x as (
    select * from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])
      with ordinality as x(project_id, agent, key_id, chain, policy_version, id, kind, actor, created_at, data, n)
  ), locked as (
    select x.n, g.frozen_at from x join agents g on g.project_id = x.project_id and g.did = x.agent for share of g
  ), ins as (
    insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index)
    select x.id, x.project_id, x.kind, x.actor, x.created_at, x.data, null from x join locked l on l.n = x.n
    where l.frozen_at is null and ${keyValid('x.key_id', 'x.project_id')}
      and ${activeVersion('x.project_id')} is not distinct from x.policy_version
      and not ${revokedAmong("string_to_array(x.chain, ',')")}
    order by x.n
    returning id
  )
  select id from ins`, { prepared: true });

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

/** A plan's one statement, ready to run: its answer if every check holds, and its event's row. */
interface Prepared { plan: DecisionPlan; record: Omit<DecisionRecord, 'audit_id'>; row: ReturnType<typeof auditEventRow>; chain: readonly string[] }

function prepare(plan: DecisionPlan): Prepared | undefined {
  const combined = eligibleOutcome(plan);
  if (!combined) return undefined;
  const { event, record } = decisionEvent(plan, combined, newId('dec'), undefined);
  return { plan, record, row: auditEventRow(event), chain: !plan.failure && plan.permit ? plan.permit.chain : [] };
}

/** PostgreSQL: the rows in one statement; true for each whose event was inserted. */
async function insertMany(db: Db | Tx, rows: readonly Prepared[]): Promise<boolean[]> {
  const column = <V>(f: (p: Prepared) => V) => rows.map(f);
  const inserted = await runFixed<{ id: string }>(db, 'postgres', POSTGRES_MANY, [
    column((p) => p.plan.projectId), column((p) => p.plan.input.agent), column((p) => p.plan.actor),
    column((p) => p.chain.join(',')), column((p) => p.plan.policyVersion),
    column((p) => p.row.id), column((p) => p.row.kind), column((p) => p.row.actor), column((p) => p.row.created_at), column((p) => p.row.data),
  ]);
  const ids = new Set(inserted.map((r) => r.id));
  return rows.map((p) => ids.has(p.row.id));
}

/** One shared statement per database (pool): decisions submitted in the same turn share it. */
const shared = new WeakMap<object, BatchedStatement<Prepared, boolean>>();
export const sharedStatementOf = (db: Db | Tx): BatchedStatement<Prepared, boolean> => {
  let statement = shared.get(db);
  if (!statement) shared.set(db, statement = new BatchedStatement((rows) => insertMany(db, rows)));
  return statement;
};

/**
 * The decision, committed by one statement; undefined if a check differs (nothing was written).
 * PostgreSQL: `db` outside any transaction, shared with the decisions submitted in the same turn.
 * SQLite: `env.raw`, inside the writer's transaction.
 */
export async function commitInOneStatement(db: Db | Tx, env: SqlTarget, plan: DecisionPlan): Promise<DecisionRecord | undefined> {
  if (env.raw ? typeof plan.epoch !== 'number' : plan.epoch !== CHECKED_AT_COMMIT) return undefined;
  const prepared = prepare(plan);
  if (!prepared) return undefined;
  const { record, row, chain } = prepared;
  const inserted = env.raw
    ? recordAuditIf(env.raw, row, sqliteCondition(chain.length), [plan.epoch, plan.projectId, plan.input.agent, ...chain])
    : await sharedStatementOf(db).submit(prepared);
  return inserted ? { ...record, audit_id: row.id } : undefined;
}
