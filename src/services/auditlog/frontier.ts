// The right edge of the tree (its peaks) as of the last batch this thread sequenced, so a batch
// need not read it back. Trusted only when the locked state row shows the same size and root (a
// batch that rolled back, or another sequencer, makes it stale, and it is read again). On SQLite
// it also remembers the seq of the last event sequenced, which lets the writer thread give its own
// events their leaf indexes as it writes them (inline.ts).
import { appendLeaves, nodePos, readerFromNodes, type AppendResult, type StoredNode } from '../../domain/auditlog/tree.ts';
import { execFixed, fixedSql, type SqlTarget } from '../../store/fixed-sql.ts';
import type { Tx } from '../../store/store.ts';
import { blob } from './log.ts';
import { toHex } from '../../domain/auditlog/bytes.ts';

export interface Frontier { size: number; root: string; peaks: StoredNode[]; lastSeq?: number | undefined }

let frontier: Frontier | undefined;

/** The cached frontier if it matches the locked state row, else undefined. */
export function frontierAt(size: number, root: Uint8Array): Frontier | undefined {
  return frontier && frontier.size === size && frontier.root === toHex(root) ? frontier : undefined;
}

/**
 * Records the tree after `result` was appended. Its peaks are the appender's own right edge:
 * unchanged peaks stay the same objects, so a batch allocates only the ones it completed (the
 * frontier lives in old space, and what it points to survives every scavenge until replaced).
 */
function advanceFrontier(result: AppendResult, lastSeq?: number): void {
  frontier = { size: result.size, root: toHex(result.root), peaks: result.peaks, lastSeq };
}

export const LOCK_STATE = {
  sqlite: 'select size, root, last_seq from audit_log_state where id = 1',
  postgres: 'select size, root from audit_log_state where id = 1 for update',
};
// SQLite: with the seq of the last event appended (migration 0608), which the sequencer and the proof
// route read as the line between sequenced events and waiting ones.
const SET_STATE_SQLITE = fixedSql('update audit_log_state set size = ?, root = ?, updated_at = ?, last_seq = coalesce(?, last_seq) where id = 1');
// SQLite: a batch's nodes go in multi-row statements of fixed sizes (each prepared once), one
// statement per 32 nodes instead of one per node (a batch of 26 decisions completes about 26 of
// two leaves or more).
const NODE_ROWS = [32, 8, 1] as const;
const insertNodes = (rows: number) => `insert into audit_nodes (pos, level, idx, hash) values ${Array(rows).fill('(?, ?, ?, ?)').join(', ')}`;
const INSERT_NODES = new Map(NODE_ROWS.map((n) => [n, insertNodes(n)]));
const INSERT_NODES_AND_SET_STATE_POSTGRES = fixedSql(`with nodes as (
    insert into audit_nodes (pos, level, idx, hash) select * from unnest(?::bigint[], ?::int[], ?::bigint[], ?::bytea[])
  ) update audit_log_state set size = ?, root = ?, updated_at = ? where id = 1`);

/**
 * Appends leaf hashes to the tree of `size` whose peaks are `peaks`, inside the caller's
 * transaction: writes the completed nodes and the new state row, and remembers the new frontier
 * (`lastSeq`: the seq of the last event appended, SQLite). The caller has locked the state row.
 */
export async function appendToTree(trx: Tx, env: SqlTarget, size: number, peaks: StoredNode[], leaves: Uint8Array[], now: Date, lastSeq?: number): Promise<AppendResult> {
  const result = appendLeaves(size, leaves, readerFromNodes(peaks));
  // A single leaf's hash lives in its event's row (leaf_hash), not here: decision 0603.
  const nodes = result.nodes.filter((n) => n.level > 0);
  if (env.raw) {
    for (let i = 0; i < nodes.length;) {
      const rows = NODE_ROWS.find((n) => n <= nodes.length - i)!;
      const params: unknown[] = [];
      for (const n of nodes.slice(i, i + rows)) params.push(nodePos(n.level, n.index), n.level, n.index, blob(n.hash));
      env.raw.prepare(INSERT_NODES.get(rows)!).run(params);
      i += rows;
    }
    await execFixed(trx, env, SET_STATE_SQLITE, [result.size, blob(result.root), now.toISOString(), lastSeq ?? null]);
  } else {
    // PostgreSQL: the nodes (parallel arrays, without the query builder: a batch of 512 events
    // completes about a thousand) and the state row in one statement, one round trip.
    await execFixed(trx, env, INSERT_NODES_AND_SET_STATE_POSTGRES, [
      nodes.map((n) => nodePos(n.level, n.index)), nodes.map((n) => n.level), nodes.map((n) => n.index), nodes.map((n) => blob(n.hash)),
      result.size, blob(result.root), now.toISOString(),
    ]);
  }
  advanceFrontier(result, lastSeq);
  return result;
}
