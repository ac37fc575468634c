// A full disk, without root. SQLite: every connection that writes (this thread's and, through
// full-disk-probe.ts, the writer thread's) capped at the database's current size, so growing it
// fails with SQLITE_FULL. PostgreSQL: a trigger on audit_events raising SQLSTATE 53100
// (disk_full), what the server says when it cannot extend a table's file.
import { sql } from 'kysely';
import type { Store } from '../../src/store/store.ts';

export const FULL_DISK_CHANNEL = 'gavel-full-disk-probe';
export type FullDiskMessage = 'full' | 'space' | 'full-applied' | 'space-applied';

/** The writer thread's Node options that let the test fill its disk. */
export const FULL_DISK_WRITER = ['--import', new URL('./full-disk-probe.ts', import.meta.url).href];

async function toWriterThread(message: 'full' | 'space'): Promise<void> {
  const channel = new BroadcastChannel(FULL_DISK_CHANNEL);
  try {
    const applied = new Promise<void>((resolve) => { channel.onmessage = ({ data }: { data: unknown }) => { if (data === `${message}-applied`) resolve(); }; });
    channel.postMessage(message);
    await applied;
  } finally { channel.close(); }
}

/**
 * Fills the database's disk (SQLite: the writer thread must run, started with FULL_DISK_WRITER).
 * PostgreSQL: `tables` say which cannot grow (default the events').
 */
export async function fillDisk(store: Store, tables: readonly ('audit_events' | 'audit_checkpoints')[] = ['audit_events']): Promise<void> {
  if (store.dialect === 'sqlite') {
    const pages = Number((await sql<{ page_count: number }>`pragma page_count`.execute(store.db)).rows[0]!.page_count);
    await sql.raw(`pragma max_page_count = ${pages}`).execute(store.db);
    await toWriterThread('full');
    return;
  }
  await sql.raw(`create or replace function gavel_test_disk_full() returns trigger language plpgsql as $$ begin
    raise exception 'could not extend file "base/16384/16385": No space left on device' using errcode = '53100', hint = 'Check free disk space.'; end $$`).execute(store.db);
  for (const t of tables) await sql.raw(`create trigger gavel_test_disk_full before insert on ${t} for each statement execute function gavel_test_disk_full()`).execute(store.db);
}

/** Frees space again. */
export async function freeDisk(store: Store, tables: readonly ('audit_events' | 'audit_checkpoints')[] = ['audit_events']): Promise<void> {
  if (store.dialect === 'sqlite') {
    await sql.raw('pragma max_page_count = 4294967294').execute(store.db);
    await toWriterThread('space');
    return;
  }
  for (const t of tables) await sql.raw(`drop trigger gavel_test_disk_full on ${t}`).execute(store.db);
}
