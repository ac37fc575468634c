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
//
// The statement is prepared where the decision was planned (prepareDecision: its ids and its event's
// canonical text) and run by the writer (commitPrepared), which on SQLite is a thread of its own
// (decision 0017). The event's leaf hash is taken where the statement runs: on SQLite by the writer
// thread, since the HTTP thread is now the busier of the two (decision 0017, session 50 addendum).
import { combine, type Combined } from '../../domain/decision/combine.ts';
import { newId } from '../../lib/ids.ts';
import { BatchedStatement } from '../../store/batched-statement.ts';
import { fixedSql, runFixed, type SqlTarget } from '../../store/fixed-sql.ts';
import { CHECKED_AT_COMMIT, EPOCH_IS, type ReadTag } from '../../store/read-epoch.ts';
import type { Db, Tx } from '../../store/store.ts';
import { auditEventRow, INSERT_HASHED_INTO, recordAuditChecked, recordAuditIf } from '../audit/record.ts';
import { leafHashHexOfStoredEvent } from '../../domain/auditlog/leaf.ts';
import { revokedAmong, revokedExists } from '../permits/permits.ts';
import { decisionEvent, type DecisionPlan } from './commit.ts';
import type { DecisionRecord } from './authorize.ts';
import { activeVersion, keyValid } from './recheck.ts';
import type { TextCodec } from '../writer/wire.ts';

// PostgreSQL: any number of decisions, one JSON array each, all in one jsonb parameter (V8 writes
// it in one pass, where node-postgres would escape each element of parallel text arrays in
// JavaScript; PostgreSQL parses it once, where each ->> on json would parse again). A row's event is
// inserted only if its agent is known and not frozen (its row locked FOR SHARE), its key still
// valid, the policy pointer still at the version planned under, and no commitment of its chain
// (comma-separated: commitments are hex) revoked. Each event is written with its leaf hash
// (migration 0605). Answers the ids inserted. The agents are locked in key order, so two such
// statements and freezes waiting between them cannot form a cycle (decision 0013).
const POSTGRES_MANY = fixedSql(`with x as (
    select e->>0 as project_id, e->>1 as agent, e->>2 as key_id, e->>3 as chain, (e->>4)::int as policy_version,
      e->>5 as id, e->>6 as kind, e->>7 as actor, e->>8 as created_at, e->>9 as data, decode(e->>10, 'hex') as leaf_hash, n
    from jsonb_array_elements(?::jsonb) with ordinality as t(e, n)
  ), locked as (
    select x.n, g.frozen_at from x join agents g on g.project_id = x.project_id and g.did = x.agent
    order by g.project_id, g.did for share of g
  ), ins as (
    ${INSERT_HASHED_INTO}
    select x.id, x.project_id, x.kind, x.actor, x.created_at, x.data, null, x.leaf_hash from x join locked l on l.n = x.n
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

/**
 * The SQLite writer thread: what the one statement's checks found in the current transaction, by
 * (read tag, project, agent, chain). Decisions of one batch usually share them, and nothing a
 * prepared decision writes changes them; while the writer holds the write lock no other
 * connection can (a freeze, a revocation and the read epoch all commit between batches). So the
 * checks run once per batch and the rest of its decisions insert plainly: the conditional INSERT
 * cost 1.4 µs more than a plain one (decision 0020). Cleared when a batch begins and before any
 * other unit runs in it (services/writer/batches.ts): the transaction creates agents.
 */
let checks: Map<string, boolean> | undefined;
/** Statements that answer whether the checks hold, by the chain's length. */
const CHECKS_HOLD: string[] = [];
/** What sqliteCondition's placeholders take, in order. */
const conditionParams = (p: PreparedDecision): unknown[] => [p.epoch, p.projectId, p.agent, ...p.chain];

/** The writer thread keeps the checks of its transaction; elsewhere each statement makes its own. */
export function installDecisionChecks(): { clear(): void } {
  const found = new Map<string, boolean>();
  checks = found;
  return { clear: () => found.clear() };
}

/** The plan's outcome if every check under the commit passes, when nothing but its event would be written. */
function eligibleOutcome(plan: DecisionPlan): Combined | undefined {
  // A delegated permit's delegators are checked for a freeze by the transaction (commit.ts).
  if (plan.epoch === undefined || plan.execution || (plan.permit?.delegators.length ?? 0) > 0) return undefined;
  const combined = combine({ frozen: false, permitFailure: plan.failure, policy: plan.policy, approvalSatisfied: false });
  if (combined.decision === 'DENY') return combined;
  return combined.decision === 'ALLOW' && (plan.permit?.counters.length ?? 0) === 0 ? combined : undefined;
}

/**
 * A decision ready for its one statement: the event's row and what the statement checks. It
 * crosses to the SQLite writer thread as text (preparedDecisionText below). Built where the
 * decision was planned (prepareDecision, on the HTTP thread); the statement's runner hashes the row
 * for its leaf (decision 0017 and its session 50 addendum).
 */
export interface PreparedDecision {
  /** The read tag the plan was made under (store/read-epoch.ts). */
  epoch: ReadTag;
  projectId: string;
  agent: string;
  /** The API key whose cached context the plan used (PostgreSQL re-checks it). */
  actor: string;
  policyVersion: number | null;
  /** Commitments that must not be revoked: the permit chain, unless the permit check failed. */
  chain: readonly string[];
  row: ReturnType<typeof auditEventRow>;
}

/**
 * The plan's one statement and its answer if every check holds; undefined if the plan's transaction
 * would write more than its event. Pure but for new ids.
 */
export function prepareDecision(plan: DecisionPlan): { statement: PreparedDecision; record: DecisionRecord } | undefined {
  const combined = eligibleOutcome(plan);
  if (!combined) return undefined;
  const { event, record } = decisionEvent(plan, combined, newId('dec'), undefined);
  const row = auditEventRow(event);
  const statement: PreparedDecision = {
    epoch: plan.epoch!, projectId: plan.projectId, agent: plan.input.agent, actor: plan.actor, policyVersion: plan.policyVersion,
    chain: !plan.failure && plan.permit ? plan.permit.chain : [], row,
  };
  return { statement, record: { ...record, audit_id: row.id } };
}

// A prepared decision crosses to the SQLite writer thread as its fields joined by U+001F
// (services/writer/wire.ts, TextCodec): the event's text is JSON already and crosses unescaped.
const FIELD = '\u001f';
/** What no field may hold: the message's separators, and in the fields but the event's text, the chain's comma. */
const UNSAFE_FIELD = /[\u001d-\u001f,]/;
const UNSAFE_TEXT = /[\u001d-\u001f]/;
// Each field is tested alone: testing them joined cost 0.35 µs a decision more, for building and
// flattening the joined string (session 14).
const safe = (field: string) => !UNSAFE_FIELD.test(field);

export const preparedDecisionText: TextCodec<PreparedDecision> = {
  encode(p) {
    const { row, chain } = p;
    for (const commitment of chain) if (commitment === '' || !safe(commitment)) return undefined;
    if (!safe(p.projectId) || !safe(p.agent) || !safe(p.actor) || !safe(row.id) || !safe(row.project_id) || !safe(row.kind)
      || !safe(row.actor) || !safe(row.created_at) || UNSAFE_TEXT.test(row.data)) return undefined;
    return `${p.epoch}${FIELD}${p.projectId}${FIELD}${p.agent}${FIELD}${p.actor}${FIELD}${p.policyVersion}${FIELD}${chain.join(',')}${FIELD}`
      + `${row.id}${FIELD}${row.project_id}${FIELD}${row.kind}${FIELD}${row.actor}${FIELD}${row.created_at}${FIELD}${row.data}`;
  },
  decode(text) {
    const f = text.split(FIELD);
    if (f.length !== 12) throw new Error(`a prepared decision has 12 fields, this one ${f.length}`);
    const [epoch, projectId, agent, actor, version, chain, id, project_id, kind, rowActor, created_at, data] = f as [string, string, string, string, string, string, string, string, string, string, string, string];
    return {
      epoch: epoch === CHECKED_AT_COMMIT ? CHECKED_AT_COMMIT : Number(epoch), projectId, agent, actor,
      policyVersion: version === 'null' ? null : Number(version), chain: chain === '' ? [] : chain.split(','),
      row: { id, project_id, kind, actor: rowActor, created_at, data },
    };
  },
};

/** PostgreSQL: the rows in one statement; true for each whose event was inserted. */
async function insertMany(db: Db | Tx, rows: readonly PreparedDecision[]): Promise<boolean[]> {
  const json = JSON.stringify(rows.map(({ projectId, agent, actor, chain, policyVersion, row }) => [
    projectId, agent, actor, chain.join(','), policyVersion,
    row.id, row.kind, row.actor, row.created_at, row.data, leafHashHexOfStoredEvent(row),
  ]));
  const inserted = await runFixed<{ id: string }>(db, 'postgres', POSTGRES_MANY, [json]);
  const ids = new Set(inserted.map((r) => r.id));
  return rows.map((p) => ids.has(p.row.id));
}

/** One shared statement per database (pool): decisions submitted in the same turn share it. */
const shared = new WeakMap<object, BatchedStatement<PreparedDecision, boolean>>();
export const sharedStatementOf = (db: Db | Tx): BatchedStatement<PreparedDecision, boolean> => {
  let statement = shared.get(db);
  if (!statement) shared.set(db, statement = new BatchedStatement((rows) => insertMany(db, rows)));
  return statement;
};

/**
 * Runs a prepared decision's one statement: true if its event was inserted, false if a check
 * differs or the plan's read tag is not this engine's (nothing was written; the transaction decides).
 * PostgreSQL: `db` outside any transaction, shared with the decisions submitted in the same turn.
 * SQLite: `env.raw`, inside the writer's transaction, answered synchronously.
 */
export function commitPrepared(db: Db | Tx, env: SqlTarget, p: PreparedDecision): boolean | Promise<boolean> {
  if (env.raw) {
    if (typeof p.epoch !== 'number') return false;
    if (!checks) return recordAuditIf(env.raw, p.row, sqliteCondition(p.chain.length), conditionParams(p));
    const key = `${p.epoch}\u0000${p.projectId}\u0000${p.agent}\u0000${p.chain.join(',')}`;
    let holds = checks.get(key);
    if (holds === undefined) {
      holds = (env.raw.prepare(CHECKS_HOLD[p.chain.length] ??= `select (${sqliteCondition(p.chain.length)}) as ok`).get(conditionParams(p)) as { ok: number }).ok === 1;
      checks.set(key, holds);
    }
    if (!holds) return false;
    recordAuditChecked(env.raw, p.row);
    return true;
  }
  if (p.epoch !== CHECKED_AT_COMMIT) return false;
  return sharedStatementOf(db).submit(p);
}
