// The read epoch (SQLite, migration 0900): a counter bumped by trigger on every change to what the
// decision path caches (API keys and what they rest on, active-policy pointers). A cache entry is
// tagged with the epoch read *before* its lookup and used only while the epoch is unchanged.
import { fixedSql, readFixed } from './fixed-sql.ts';
import type { Store } from './store.ts';

const READ_EPOCH = fixedSql('select n from read_epoch where id = 1');

/** The current epoch on SQLite; undefined on PostgreSQL (nothing is cached there). */
export async function readEpoch(store: Store): Promise<number | undefined> {
  if (store.dialect !== 'sqlite') return undefined;
  return Number((await readFixed<{ n: number }>(store, READ_EPOCH, []))[0]!.n);
}
