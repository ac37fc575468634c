// The read epoch (SQLite, migration 0900): a counter bumped by trigger on every change to what the
// decision path caches (API keys and what they rest on, active-policy pointers). A cache entry is
// tagged with the epoch read *before* its lookup and used only while the epoch is unchanged.
//
// A decision defers the check to its own transaction: the HTTP thread uses the key's cached context
// (and the policy pointer cached under the same epoch) without reading the epoch, the plan carries
// that epoch, and the writer compares it with the current one before it writes anything
// (epochStillCurrent). A mismatch throws StaleReadEpoch; the caller authenticates afresh (a revoked
// key then gets its 401) and decides again. So the check holds at commit time, like the frozen check.
//
// PostgreSQL has no epoch (a counter row bumped by triggers would serialize, and could deadlock,
// the transactions that change keys and grants). A decision there may still use a cached key
// context and policy pointer, tagged CHECKED_AT_COMMIT: its transaction re-reads the key's validity
// and the pointer in the statement that locks the agent (services/authorize/recheck.ts) and throws
// StaleReadEpoch on a difference, with the same retry.
import { fixedSql, queryFixed, readFixed, type SqlTarget } from './fixed-sql.ts';
import type { Store, Tx } from './store.ts';

const EPOCH_QUERY = 'select n from read_epoch where id = 1';
/** The current epoch as an SQL expression (a decision's one statement compares it in place). */
export const EPOCH_IS = `(${EPOCH_QUERY})`;
const READ_EPOCH = fixedSql(EPOCH_QUERY);

/**
 * The tag of a PostgreSQL decision's cached key context and policy pointer: no epoch validates
 * them, so the decision's own transaction checks both (services/authorize/recheck.ts).
 */
export const CHECKED_AT_COMMIT = 'checked-at-commit';
/** What a cached read is tagged with: the SQLite read epoch it was validated at, or CHECKED_AT_COMMIT. */
export type ReadTag = number | typeof CHECKED_AT_COMMIT;

/** A decision was planned under an epoch (or, on PostgreSQL, a key context or policy pointer) that has moved on: authenticate again and redo it. */
export class StaleReadEpoch extends Error {
  override readonly name = 'StaleReadEpoch';
  constructor() { super('what the decision was planned under (API key, policy pointer) changed before it committed'); }
}

/** Inside a write transaction (SQLite): throws StaleReadEpoch unless `epoch` is still the current one. */
export async function epochStillCurrent(trx: Tx, env: SqlTarget, epoch: number): Promise<void> {
  const rows = await queryFixed<{ n: number }>(trx, env, READ_EPOCH, []);
  if (Number(rows[0]!.n) !== epoch) throw new StaleReadEpoch();
}

/** The current epoch on SQLite; undefined on PostgreSQL (which has none: CHECKED_AT_COMMIT). */
export async function readEpoch(store: Store): Promise<number | undefined> {
  if (store.dialect !== 'sqlite') return undefined;
  return Number((await readFixed<{ n: number }>(store, READ_EPOCH, []))[0]!.n);
}
