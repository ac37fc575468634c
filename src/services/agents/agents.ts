// Agents: registered by DID per project; frozen and released by people or platform keys.
// Freezing takes effect on the next decision, including one in flight: the decision re-reads the
// agent row inside its own transaction, under a lock that a freeze must wait for (PostgreSQL) or
// behind the single writer (SQLite).

import { Problem } from '../../http/problem.ts';
import type { Dialect, Tx } from '../../store/store.ts';
import { sql } from 'kysely';
import { execFixed, fixedSql, fixedSqlForShare, queryFixed, type SqlTarget } from '../../store/fixed-sql.ts';
import { recordAudit } from '../audit/record.ts';

export interface AgentState {
  agent: string;
  frozen: boolean;
  frozen_at: string | null;
  frozen_by: string | null;
  reason: string | null;
  /** Since when, and by whom, an agent that was frozen is not (null while frozen, or if never frozen). */
  released_at: string | null;
  released_by: string | null;
}

/** The agent row's state columns, as every view of the state reads them. */
const STATE_COLUMNS = ['frozen_at', 'frozen_by', 'frozen_reason', 'released_at', 'released_by'] as const;
export type AgentStateRow = { frozen_at: string | null; frozen_by: string | null; frozen_reason: string | null; released_at: string | null; released_by: string | null };

/** The state of `did` from its row (an agent without one has never been frozen). */
export function agentState(did: string, row: AgentStateRow | undefined): AgentState {
  return {
    agent: did, frozen: Boolean(row?.frozen_at), frozen_at: row?.frozen_at ?? null, frozen_by: row?.frozen_by ?? null, reason: row?.frozen_reason ?? null,
    released_at: row?.released_at ?? null, released_by: row?.released_by ?? null,
  };
}

// Fixed SQL: these run inside every decision that may allow (see store/fixed-sql.ts).
const ENSURE = fixedSql(`insert into agents (project_id, did, name, created_at, created_by, frozen_at, frozen_by, frozen_reason)
  values (?, ?, ?, ?, ?, null, null, null) on conflict (project_id, did) do nothing`);
const LOCK_STATE = fixedSqlForShare('select frozen_at from agents where project_id = ? and did = ?');

/** Makes sure the agent has a row (so it can be locked), without changing an existing one. */
export async function ensureAgent(trx: Tx, projectId: string, did: string, actor: string, at: string, name: string | null = null, target?: SqlTarget): Promise<void> {
  await execFixed(trx, target, ENSURE, [projectId, did, name, at, actor]);
}

const LOCK_STATES: ReturnType<typeof fixedSqlForShare>[] = [];
const lockStates = (n: number) => (LOCK_STATES[n] ??=
  fixedSqlForShare(`select did, frozen_at from agents where project_id = ? and did in (${Array(n).fill('?').join(', ')})`));

/**
 * The first of `dids` (in their order) that is frozen, read under the share lock lockAgentState
 * takes. With `ensure`, each is given a row first, so that a freeze committing meanwhile waits for
 * this transaction instead of inserting a row it never sees.
 */
export async function firstFrozen(trx: Tx, target: SqlTarget, projectId: string, dids: readonly string[], ensure: { actor: string; at: string } | null): Promise<string | undefined> {
  // In one order (sorted), so two decisions inserting the same new rows never wait on each other in a cycle.
  if (ensure) for (const did of [...dids].sort()) await ensureAgent(trx, projectId, did, ensure.actor, ensure.at, null, target);
  const rows = await queryFixed<{ did: string; frozen_at: string | null }>(trx, target, lockStates(dids.length), [projectId, ...dids]);
  const frozen = new Set(rows.filter((r) => r.frozen_at !== null).map((r) => r.did));
  return dids.find((did) => frozen.has(did));
}

/** The agent's frozen state, read under a share lock that a concurrent freeze must wait for. */
export async function lockAgentState(trx: Tx, target: SqlTarget, projectId: string, did: string): Promise<{ frozen_at: string | null } | undefined> {
  return (await queryFixed<{ frozen_at: string | null }>(trx, target, LOCK_STATE, [projectId, did]))[0];
}

/**
 * A freeze or release of an agent: `at` is read once the change holds its lock (a function), so the
 * recorded time is when it took effect, not when it was asked for. `dialect` postgres: see
 * queueAheadOfDecisions.
 */
export interface StateChange { projectId: string; did: string; actor: string; reason: string | null; at: string | (() => string); dialect?: Dialect }

/**
 * PostgreSQL: every decision that may allow holds its agent's row FOR SHARE until it commits, and a
 * new share lock joins the holders without queuing behind a waiting UPDATE. While one agent's
 * decisions overlap (a busy agent spending its budget), a freeze's UPDATE waited for them to stop:
 * seconds, thousands of ALLOWs, or for ever. A table lock queues fairly: EXCLUSIVE waits for the
 * decisions in flight (their ROW SHARE) and every later one waits behind it, for the few statements
 * of the freeze. Plain reads (ACCESS SHARE) go on. Taken first, before the freeze holds any other
 * lock a decision could wait for.
 */
export async function queueAheadOfDecisions(trx: Tx, dialect: Dialect | undefined): Promise<void> {
  if (dialect !== 'postgres') return;
  // Every decision asking after it waits while it waits. Gavel's own holders are gone within a
  // moment (or within IDLE_IN_TRANSACTION_MS, cut off), but another client's row lock on any agent
  // (an operator's open `select … for update`) is held as long as its session pleases: bounded here,
  // the change fails with 503 busy, nothing done, rather than pausing every decision until the
  // reply timeout and then leaving its session queued at the server.
  await sql`select set_config('lock_timeout', ${String(QUEUE_AHEAD_WAIT_MS)}, true)`.execute(trx);
  await sql`lock table agents in exclusive mode`.execute(trx);
}

/** How long a freeze, release or revocation waits for its table lock before it gives up (503 busy). */
export const QUEUE_AHEAD_WAIT_MS = 3_000;

export async function freezeAgent(trx: Tx, input: StateChange): Promise<AgentState> {
  // A freeze that changes nothing takes no lock: the table lock pauses every decision of the
  // database, and any key may ask for a freeze. The locked update below checks again.
  if (input.dialect === 'postgres') {
    const current = await getAgentState(trx, input.projectId, input.did);
    if (current.frozen_at !== null) throw alreadyFrozen(current);
  }
  await queueAheadOfDecisions(trx, input.dialect);
  const at = typeof input.at === 'function' ? input.at() : input.at;
  await ensureAgent(trx, input.projectId, input.did, input.actor, at);
  const row = await trx.updateTable('agents')
    .set({ frozen_at: at, frozen_by: input.actor, frozen_reason: input.reason, released_at: null, released_by: null })
    .where('project_id', '=', input.projectId).where('did', '=', input.did).where('frozen_at', 'is', null)
    .returning(STATE_COLUMNS).executeTakeFirst();
  if (!row) throw alreadyFrozen(await getAgentState(trx, input.projectId, input.did));
  await recordAudit(trx, { projectId: input.projectId, kind: 'agent.frozen', actor: input.actor, at, data: { agent: input.did, reason: input.reason } });
  return agentState(input.did, row);
}

export async function releaseAgent(trx: Tx, input: StateChange): Promise<AgentState> {
  if (input.dialect === 'postgres' && (await getAgentState(trx, input.projectId, input.did)).frozen_at === null) throw notFrozen();
  await queueAheadOfDecisions(trx, input.dialect);
  const at = typeof input.at === 'function' ? input.at() : input.at;
  const row = await trx.updateTable('agents')
    .set({ frozen_at: null, frozen_by: null, frozen_reason: null, released_at: at, released_by: input.actor })
    .where('project_id', '=', input.projectId).where('did', '=', input.did).where('frozen_at', 'is not', null)
    .returning(STATE_COLUMNS).executeTakeFirst();
  if (!row) throw notFrozen();
  await recordAudit(trx, { projectId: input.projectId, kind: 'agent.released', actor: input.actor, at, data: { agent: input.did, reason: input.reason } });
  return agentState(input.did, row);
}

const alreadyFrozen = (current: AgentState) => new Problem(409, 'agent_already_frozen', `the agent has been frozen since ${current.frozen_at}`, { extra: { state: current } });
const notFrozen = () => new Problem(409, 'agent_not_frozen', 'the agent is not frozen');

export async function getAgentState(trx: Tx | import('../../store/store.ts').Db, projectId: string, did: string): Promise<AgentState> {
  const row = await trx.selectFrom('agents').select(STATE_COLUMNS).where('project_id', '=', projectId).where('did', '=', did).executeTakeFirst();
  return agentState(did, row);
}

