// SQLite commits one writer at a time, so the sequencer finds waiting events by seq after the last
// sequenced one (services/auditlog/sequencer.ts) and the partial index of unsequenced events, an
// insert and a delete per event, is dropped there. PostgreSQL keeps it: commit order is not seq
// order there.
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') await sql`drop index if exists audit_events_unsequenced`.execute(db);
}
