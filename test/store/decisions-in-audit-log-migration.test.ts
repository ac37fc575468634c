// Migration 0604: a decision is recorded once, as its audit event. The decisions table it drops
// repeated those events; it is dropped only when every row's event is there, never otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { up } from '../../src/store/migrations/0604_decisions_in_audit_log.ts';

for (const backend of backends()) {
  test(`migration 0604 (${backend.name}): drops decisions only when every one has its audit event`, async () => {
    const ts = await backend.open();
    try {
      const { db } = ts.store;
      const exists = async () => {
        try { await sql`select count(*) from decisions`.execute(db); return true; } catch { return false; }
      };
      assert.equal(await exists(), false, 'a migrated store has no decisions table');
      const recreate = async () => {
        await sql`create table decisions (id text primary key, project_id text not null, audit_id text not null)`.execute(db);
      };
      const event = (id: string, kind = 'decision') => sql`insert into audit_events (id, project_id, kind, actor, created_at, data)
        values (${id}, 'prj_m', ${kind}, 'system', '2026-01-01T00:00:00.000Z', '{}')`.execute(db);

      // Every row has its event: the table goes.
      await recreate();
      await event('aud_m1');
      await sql`insert into decisions (id, project_id, audit_id) values ('dec_m1', 'prj_m', 'aud_m1')`.execute(db);
      await up(db);
      assert.equal(await exists(), false);

      // A row whose event is missing (or is not a decision's): refused, and the table stays.
      await recreate();
      await event('aud_m2', 'policy_activated');
      await sql`insert into decisions (id, project_id, audit_id) values ('dec_m1', 'prj_m', 'aud_m1'), ('dec_m2', 'prj_m', 'aud_m2'), ('dec_m3', 'prj_m', 'aud_gone')`.execute(db);
      await assert.rejects(up(db), /2 decisions have no audit event/);
      assert.equal(await exists(), true, 'nothing dropped');
      await sql`drop table decisions`.execute(db);
    } finally { await ts.cleanup(); }
  });
}
