// PostgreSQL: an event waits for the sequencer while it is marked `pending`, a mark it is written
// with (the column's default) and the sequencer clears as it sets the leaf index. A lower seq may
// commit after a higher one there, so seq order cannot tell an event whose leaf index was erased by
// hand from one that committed late; without the mark the sequencer appended the former again, a
// duplicate leaf (services/auditlog/sequencer.ts, proofs.ts `unsequenced`). SQLite needs no mark:
// it commits in seq order and never looks behind the last sequenced event (migration 0601).
// Adding a nullable column and a default rewrites nothing; only the waiting events are marked, so
// every event sequenced before this migration counts as sequenced.
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`alter table audit_events add column if not exists pending boolean`.execute(db);
  await sql`alter table audit_events alter column pending set default true`.execute(db);
  await sql`update audit_events set pending = true where leaf_index is null and pending is null`.execute(db);
}
