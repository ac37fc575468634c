// Migration 0603 (SQLite) rebuilds decisions and audit_events with fewer B-trees. On a store that
// already holds rows: every row survives, seq never goes back (AUTOINCREMENT's high-water mark is
// carried over, even past deleted rows), and uniqueness holds per project.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { up } from '../../src/store/migrations/0603_sqlite_fewer_btrees.ts';

const sqlite = backends().find((b) => b.name === 'sqlite')!;

test('migration 0603 keeps every decision and audit event, and seq keeps growing', async () => {
  const ts = await sqlite.open();
  try {
    const { db } = ts.store;
    // Undo 0603's shape: the tables as 0001/0200/0302 made them.
    await sql`drop table if exists decisions`.execute(db); // gone since 0604
    await sql`create table decisions (id text primary key, project_id text not null, request_id text not null, audit_id text not null,
      agent text not null, action text not null, resource text not null, amount_minor bigint, amount_currency text,
      delegation_depth integer not null, permit_commitment text, request_time text not null, decision text not null,
      reason_code text not null, policy_version integer, matched_rules text not null, created_at text not null, intent text,
      approval_request_id text)`.execute(db);
    await sql`create index decisions_project on decisions (project_id, id)`.execute(db);
    await sql`drop table audit_events`.execute(db);
    await sql`create table audit_events (seq integer primary key autoincrement, id text not null unique, project_id text not null,
      kind text not null, actor text not null, created_at text not null, data text not null, leaf_index bigint unique)`.execute(db);
    await sql`create index audit_events_project on audit_events (project_id, id)`.execute(db);
    for (let i = 0; i < 5; i++) {
      await sql`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index)
        values (${`aud_${i}`}, 'prj_a', 'test', 'system', '2026-01-01T00:00:00.000Z', ${JSON.stringify({ i })}, ${i < 3 ? i : null})`.execute(db);
      await sql`insert into decisions (id, project_id, request_id, audit_id, agent, action, resource, amount_minor, amount_currency,
        delegation_depth, permit_commitment, request_time, decision, reason_code, policy_version, matched_rules, created_at, intent, approval_request_id)
        values (${`dec_${i}`}, 'prj_a', 'req', ${`aud_${i}`}, 'did:key:z', 'pay', 'resource://x', 100, 'EUR', 0, null,
        '2026-01-01T00:00:00.000Z', 'ALLOW', 'policy_allow', 1, '[]', '2026-01-01T00:00:00.000Z', ${i === 1 ? 'buy' : null}, null)`.execute(db);
    }
    await sql`delete from audit_events where seq = 5`.execute(db); // the high-water mark is 5, max(seq) 4

    await up(db, 'sqlite');

    const events = await sql<{ seq: number; id: string; leaf_index: number | null; data: string }>`select seq, id, leaf_index, data from audit_events order by seq`.execute(db);
    assert.deepEqual(events.rows.map((r) => [Number(r.seq), r.id, r.leaf_index === null ? null : Number(r.leaf_index), r.data]),
      [[1, 'aud_0', 0, '{"i":0}'], [2, 'aud_1', 1, '{"i":1}'], [3, 'aud_2', 2, '{"i":2}'], [4, 'aud_3', null, '{"i":3}']]);
    const decisions = await sql<{ id: string; intent: string | null }>`select id, intent from decisions order by id`.execute(db);
    assert.deepEqual(decisions.rows.map((r) => [r.id, r.intent]), [['dec_0', null], ['dec_1', 'buy'], ['dec_2', null], ['dec_3', null], ['dec_4', null]]);
    const next = await sql`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index)
      values ('aud_new', 'prj_a', 'test', 'system', '2026-01-01T00:00:00.000Z', '{}', null)`.execute(db);
    assert.equal(Number(next.insertId), 6, 'seq continues past the deleted row, never reusing 5');
    await assert.rejects(sql`insert into audit_events (id, project_id, kind, actor, created_at, data) values ('aud_0', 'prj_a', 'k', 's', 't', '{}')`.execute(db), 'id unique per project');
    await assert.rejects(sql`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index) values ('aud_x', 'prj_a', 'k', 's', 't', '{}', 0)`.execute(db), 'leaf_index unique');
    await assert.rejects(sql`insert into decisions (id, project_id, request_id, audit_id, agent, action, resource, delegation_depth, request_time, decision, reason_code, matched_rules, created_at)
      values ('dec_0', 'prj_a', 'r', 'a', 'g', 'x', 'y', 0, 't', 'DENY', 'r', '[]', 't')`.execute(db), 'decision id unique per project');
    const plan = await sql<{ detail: string }>`explain query plan select * from decisions where project_id = 'prj_a' order by id desc limit 10`.execute(db);
    assert.ok(!plan.rows.some((r) => /TEMP B-TREE/.test(r.detail)), 'replay reads decisions in key order, without sorting');
  } finally { await ts.cleanup(); }
});
