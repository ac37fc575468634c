// Migration 0607 (PostgreSQL): an event waits for the sequencer while it is marked pending. On a
// log written before it, the events waiting then are marked and sequenced as before; the sequenced
// ones are not, so one whose leaf index is later erased is never appended again. SQLite: nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { up } from '../../src/store/migrations/0607_postgres_pending_events.ts';

const insert = (id: string, leafIndex: number | null) =>
  sql`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index) values (${id}, 'prj_x', 'test', 'system', '2026-01-01T00:00:00.000Z', '{}', ${leafIndex})`;

for (const backend of backends()) {
  test(`migration 0607 marks the events waiting at the time as pending, and new events by default (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const { db, dialect } = ts.store;
      if (dialect === 'sqlite') {
        await up(db, dialect);
        const cols = await sql<{ name: string }>`select name from pragma_table_info('audit_events')`.execute(db);
        assert.equal(cols.rows.some((c) => c.name === 'pending'), false, 'SQLite has no such column');
        return;
      }
      // The table as the previous version left it: one event sequenced, one waiting.
      await sql`alter table audit_events drop column pending`.execute(db);
      await insert('aud_sequenced', 0).execute(db);
      await insert('aud_waiting', null).execute(db);
      await up(db, dialect);
      await insert('aud_new', null).execute(db);
      await up(db, dialect); // run again: nothing changes, nothing fails
      const rows = await sql<{ id: string; pending: boolean | null }>`select id, pending from audit_events order by seq`.execute(db);
      assert.deepEqual(rows.rows.map((r) => [r.id, r.pending]), [['aud_sequenced', null], ['aud_waiting', true], ['aud_new', true]]);
    } finally { await ts.cleanup(); }
  });
}
