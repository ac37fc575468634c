// The right edge of the tree (its peaks) as of the last batch this thread sequenced, so a batch
// need not read it back. Trusted only when the locked state row shows the same size and root (a
// batch that rolled back, or another sequencer, makes it stale, and it is read again). On SQLite
// it also remembers the seq of the last event sequenced, which lets the writer thread give its own
// events their leaf indexes as it writes them (inline.ts).
import { planAppend, readerFromNodes, type AppendResult, type StoredNode } from '../../domain/auditlog/tree.ts';
import { fixedSql } from '../../store/fixed-sql.ts';

export interface Frontier { size: number; root: string; peaks: StoredNode[]; lastSeq?: number | undefined }

let frontier: Frontier | undefined;

export const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** The cached frontier if it matches the locked state row, else undefined. */
export function frontierAt(size: number, root: Uint8Array): Frontier | undefined {
  return frontier && frontier.size === size && frontier.root === hex(root) ? frontier : undefined;
}

/** Records the tree after `result` was appended to a tree whose peaks were `peaks`. */
export function advanceFrontier(peaks: readonly StoredNode[], result: AppendResult, lastSeq?: number): void {
  const known = readerFromNodes([...peaks, ...result.nodes]);
  const next = planAppend(result.size).map((a) => ({ ...a, hash: known(a.level, a.index) }));
  frontier = next.every((n) => n.hash !== undefined)
    ? { size: result.size, root: hex(result.root), peaks: next as StoredNode[], lastSeq }
    : undefined;
}

export const LOCK_STATE = {
  sqlite: 'select size, root from audit_log_state where id = 1',
  postgres: 'select size, root from audit_log_state where id = 1 for update',
};
export const SET_STATE = fixedSql('update audit_log_state set size = ?, root = ?, updated_at = ? where id = 1');
export const INSERT_NODE = fixedSql('insert into audit_nodes (pos, level, idx, hash) values (?, ?, ?, ?)');
