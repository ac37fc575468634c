// Sequencer: gives committed audit events gapless leaf indexes and integrates them into the tree.
// One batch is one transaction that locks the state row (SQLite: BEGIN IMMEDIATE; PostgreSQL:
// SELECT … FOR UPDATE), reads its size, takes the oldest unsequenced events visible to it, appends
// them after the current peaks, writes the new nodes, the leaf indexes and the new size. Leaf
// indexes come from the state row, never from a database SEQUENCE, so they cannot have gaps; and
// because every batch starts from the committed size under the row lock, two sequencers racing
// (a lost leadership, say) serialize instead of forking the tree.
import { leafHashOfStoredEvent, type StoredEvent } from '../../domain/auditlog/leaf.ts';
import { planAppend } from '../../domain/auditlog/tree.ts';
import { appendToTree, frontierAt, LOCK_STATE } from './frontier.ts';
import { inlineSequencer } from './inline.ts';
import type { Store, Tx } from '../../store/store.ts';
import { execFixed, fixedSql, queryFixed, type SqlTarget } from '../../store/fixed-sql.ts';
import { ensureLogState, fromBlob, readNodes } from './log.ts';
import { EMPTY_ROOT } from '../../domain/auditlog/hash.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';

// Batches with a turn of the event loop between them. On SQLite a batch holds the writer thread
// while it runs, so a large one shows as a latency spike for the decisions behind it: 64 events.
// On PostgreSQL it holds only the state row's lock, which no decision takes, and each batch costs
// several round trips: 512 events, so that sequencing keeps up with decisions that share one
// statement (decision 0013) rather than fall behind under sustained load.
const defaultBatch = (dialect: Store['dialect']): number => (dialect === 'postgres' ? 512 : 64);

export interface SequencedBatch {
  /** Events integrated by this batch. */
  count: number;
  /** Tree size after the batch. */
  size: number;
  root: Uint8Array;
}

/** The locked state row; `lastSeq` (the seq of the last event sequenced) on SQLite only. */
async function lockState(trx: Tx, env: SqlTarget): Promise<{ size: number; root: Uint8Array; lastSeq: number } | undefined> {
  const row = (await queryFixed<{ size: number; root: Uint8Array; last_seq?: number }>(trx, env, LOCK_STATE, []))[0];
  return row && { size: Number(row.size), root: fromBlob(row.root), lastSeq: Number(row.last_seq ?? 0) };
}

/** Runs one sequencing batch (`sequenceWork`) in a transaction; the service passes its writer. */
export type SequenceBatch = (max: number, now: Date) => Promise<SequencedBatch>;

/** Sequences up to `max` waiting events in one transaction of its own; count 0 when none wait. */
export async function sequenceBatch(store: Store, max = defaultBatch(store.dialect), now: Date = new Date(), batch?: SequenceBatch): Promise<SequencedBatch> {
  await ensureLogState(store);
  return batch ? batch(max, now) : store.transaction((trx) => sequenceWork(trx, { dialect: store.dialect, raw: store.raw }, max, now));
}

// PostgreSQL: a lower seq can commit after a higher one, so the waiting events are found by the
// partial index on unsequenced rows; of those, only the ones still marked pending (migration 0607):
// a row whose leaf index was erased by hand after it was sequenced is damage, reported by the proof
// and verification routes, never a leaf to append a second time. SQLite: one writer at a time, so commit order is seq order
// and the waiting events are exactly those after the last sequenced one (no index to maintain:
// migration 0601 drops it there), whose seq the state row records (migration 0608): read off the
// events, a row altered or deleted by hand would move that line back, and a sequenced event behind
// it would be appended a second time.
// An event written with its leaf hash (migration 0605) is read without its text.
const WAITING_COLUMNS = `id, leaf_hash, project_id, kind, actor, created_at, case when leaf_hash is null then data end as data`;
const WAITING = {
  postgres: fixedSql(`select ${WAITING_COLUMNS} from audit_events where leaf_index is null and pending order by seq limit ?`).postgres,
  sqlite: `select seq, ${WAITING_COLUMNS} from audit_events where seq > ? and leaf_index is null order by seq limit ?`,
};
type Waiting = Omit<StoredEvent, 'data'> & { data: string | null; leaf_hash: Uint8Array | null; seq?: number };
const leafOf = (e: Waiting): Uint8Array => (e.leaf_hash ? fromBlob(e.leaf_hash) : leafHashOfStoredEvent(e as StoredEvent));
// SQLite: by rowid. A run of consecutive seqs (the usual case) takes one statement.
const SET_INDEX = fixedSql('update audit_events set leaf_index = ? where seq = ? and leaf_index is null');
// PostgreSQL: the batch's ids and their indexes as parallel arrays, in one statement, which clears
// their pending mark with it.
const SET_INDEXES_POSTGRES = fixedSql(`update audit_events as a set leaf_index = u.li, pending = null
  from unnest(?::text[], ?::bigint[]) as u(id, li) where a.id = u.id and a.leaf_index is null`);
const SET_RANGE = fixedSql('update audit_events set leaf_index = seq + ? where seq >= ? and seq <= ? and leaf_index is null');

/** One batch's work inside the caller's transaction (a writer procedure). */
export async function sequenceWork(trx: Tx, env: SqlTarget, max: number, now: Date): Promise<SequencedBatch> {
  const dialect = env.dialect;
  // Inside a writer batch whose events take their leaf indexes as they are written (inline.ts),
  // nothing else is waiting and the batch's end integrates its own: there is nothing to do here.
  const inline = inlineSequencer();
  if (inline?.active) return inline.committedState();
  const state = await lockState(trx, env);
  // No state row yet: the log has not been started (ensureLogState); nothing can be sequenced.
  if (!state) return { count: 0, size: 0, root: EMPTY_ROOT };
  // Read after the lock: under READ COMMITTED this statement sees every batch committed before.
  const events = await queryFixed<Waiting>(trx, env, WAITING, dialect === 'sqlite' ? [state.lastSeq, max] : [max]);
  if (events.length === 0) return { count: 0, size: state.size, root: state.root };
  const leaves = events.map(leafOf);
  const peaks = frontierAt(state.size, state.root)?.peaks ?? await readNodes(trx, planAppend(state.size));
  if (dialect === 'postgres') {
    await execFixed(trx, env, SET_INDEXES_POSTGRES, [events.map((e) => e.id), events.map((_, i) => state.size + i)]);
  } else {
    // By rowid: one range statement when the seqs are consecutive, else one prepared statement
    // each (an UPDATE … FROM json_each over the batch was planned as a scan).
    const first = Number(events[0]!.seq);
    const last = Number(events[events.length - 1]!.seq);
    const done = last - first + 1 === events.length
      ? await execFixed(trx, env, SET_RANGE, [state.size - first, first, last])
      : 0;
    if (done !== events.length) {
      for (const [i, e] of events.entries()) await execFixed(trx, env, SET_INDEX, [state.size + i, e.seq]);
    }
  }
  const lastSeq = events[events.length - 1]!.seq;
  const result = await appendToTree(trx, env, state.size, peaks, leaves, now, lastSeq === undefined ? undefined : Number(lastSeq));
  return { count: events.length, size: result.size, root: result.root };
}

/** Sequences until nothing waits (or `maxBatches` batches ran); returns the events integrated. */
export async function sequencePending(store: Store, options: { batch?: number; maxBatches?: number; now?: Date; sequence?: SequenceBatch } = {}): Promise<number> {
  let total = 0;
  const max = options.batch ?? defaultBatch(store.dialect);
  for (let i = 0; i < (options.maxBatches ?? 1600); i++) {
    const b = await sequenceBatch(store, max, options.now, options.sequence);
    total += b.count;
    if (b.count < max) break;
    await nextTurn();
  }
  return total;
}
