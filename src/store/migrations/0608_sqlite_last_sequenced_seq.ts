// SQLite: the state row records the seq of the last event sequenced (`last_seq`), written with the
// size by every batch. The sequencer takes the events after it and the proof route calls an event
// at or before it with no leaf index damage, at once. Found instead from the events themselves (the
// row holding leaf size - 1, else the newest with a leaf index), the newest leaf's erased index made
// its event look waiting: it was appended a second time, a duplicate leaf, once anything else was
// written. PostgreSQL marks waiting events instead (migration 0607): seq order is not commit order
// there. A new log's row starts at 0 (the column's default); an existing one's is read off the events
// as the sequencer read it; adding the column rewrites nothing.
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  const columns = await sql<{ name: string }>`select name from pragma_table_info('audit_log_state')`.execute(db);
  if (columns.rows.some((c) => c.name === 'last_seq')) return;
  await sql`alter table audit_log_state add column last_seq integer not null default 0`.execute(db);
  await sql`update audit_log_state set last_seq = coalesce(
      (select seq from audit_events where leaf_index = audit_log_state.size - 1),
      (select seq from audit_events where leaf_index is not null order by seq desc limit 1), 0)`.execute(db);
}
