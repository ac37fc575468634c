// Migration 0608 (SQLite): the state row records the seq of the last event sequenced. On a log
// written before it, that is the seq of the row holding the newest leaf, as the sequencer read it
// then; a new log's row starts at 0. PostgreSQL: nothing (its waiting events are marked, 0607).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { up } from '../../src/store/migrations/0608_sqlite_last_sequenced_seq.ts';

const insert = (seq: number, leafIndex: number | null) =>
  sql`insert into audit_events (seq, id, project_id, kind, actor, created_at, data, leaf_index) values (${seq}, ${`aud_${seq}`}, 'prj_x', 'test', 'system', '2026-01-01T00:00:00.000Z', '{}', ${leafIndex})`;
const state = (size: number) =>
  sql`insert into audit_log_state (id, origin, size, root, updated_at) values (1, 'gavel.local/x/log', ${size}, ${Buffer.alloc(32)}, '2026-01-01T00:00:00.000Z')`;
const lastSeq = async (db: Parameters<typeof up>[0]) =>
  Number((await sql<{ last_seq: number }>`select last_seq from audit_log_state where id = 1`.execute(db)).rows[0]!.last_seq);

for (const backend of backends()) {
  test(`migration 0608 records the seq of the newest leaf's event on the state row (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const { db, dialect } = ts.store;
      const columns = async () => (await sql<{ column_name: string }>`select column_name from information_schema.columns where table_name = 'audit_log_state' and table_schema = current_schema()`.execute(db)).rows.map((c) => c.column_name);
      if (dialect === 'postgres') {
        await up(db, dialect);
        assert.equal((await columns()).includes('last_seq'), false, 'PostgreSQL has no such column');
        return;
      }
      // The log as the previous version left it: two events sequenced (seq 2 and 4), one waiting.
      await sql`alter table audit_log_state drop column last_seq`.execute(db);
      await state(2).execute(db);
      await insert(2, 0).execute(db);
      await insert(4, 1).execute(db);
      await insert(5, null).execute(db);
      await up(db, dialect);
      assert.equal(await lastSeq(db), 4);
      await up(db, dialect); // run again: nothing changes, nothing fails
      assert.equal(await lastSeq(db), 4);
      // A new log's row, written without the column: nothing sequenced.
      await sql`delete from audit_log_state`.execute(db);
      await state(0).execute(db);
      assert.equal(await lastSeq(db), 0);
    } finally { await ts.cleanup(); }
  });
}
