// An audit event may carry its leaf hash, computed from the same values as it is written, so the
// sequencer reads 32 bytes per event instead of its text. On PostgreSQL a 512-event batch read
// about 600 KB of event text, parsed over several turns of the event loop while decisions ran, and
// that text outlived scavenges into the old generation (session 10: 8-11 MB/s promoted at 4,300
// decisions/s). Events written without it (before this migration, or on SQLite's writer thread,
// whose inline sequencing hashes them as they are written) are hashed from their text as before.
import { sql, type Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await sql`alter table audit_events add column leaf_hash ${sql.raw(columns(dialect).bytes)}`.execute(db);
}
