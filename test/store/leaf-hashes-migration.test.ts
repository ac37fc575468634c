// Migration 0606 moves each sequenced event's leaf hash from its level-0 node into its row and drops
// those nodes (decision 0603): on a log written the old way, every proof must still verify, and no
// level-0 node may remain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { up } from '../../src/store/migrations/0606_leaf_hashes_in_events.ts';
import { appendLeaves, assemble, nodePos, planInclusion, readerFromNodes } from '../../src/domain/auditlog/tree.ts';
import { leafHashOfStoredEvent } from '../../src/domain/auditlog/leaf.ts';
import { verifyInclusion } from '../../src/domain/auditlog/verify.ts';
import { blob, readNodes } from '../../src/services/auditlog/log.ts';

for (const backend of backends()) {
  test(`migration 0606 moves leaf hashes from level-0 nodes into their events (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const { db, dialect } = ts.store;
      // A log of 13 events as the old version left it: no leaf hash in the rows, every node stored.
      const rows = Array.from({ length: 13 }, (_, i) => ({ id: `aud_${i}`, project_id: 'prj_x', kind: 'test', actor: 'system', created_at: '2026-01-01T00:00:00.000Z', data: `{"i":${i}}` }));
      for (const [i, r] of rows.entries()) {
        await sql`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index) values (${r.id}, ${r.project_id}, ${r.kind}, ${r.actor}, ${r.created_at}, ${r.data}, ${i})`.execute(db);
      }
      // And one event written but not yet sequenced.
      await sql`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index) values ('aud_waiting', 'prj_x', 'test', 'system', '2026-01-01T00:00:00.000Z', '{}', null)`.execute(db);
      const tree = appendLeaves(0, rows.map((r) => leafHashOfStoredEvent(r)), () => undefined);
      for (const n of tree.nodes) await sql`insert into audit_nodes (pos, level, idx, hash) values (${nodePos(n.level, n.index)}, ${n.level}, ${n.index}, ${blob(n.hash)})`.execute(db);

      await up(db, dialect);

      const after = await db.selectFrom('audit_events').select(['id', 'leaf_index', 'leaf_hash']).orderBy('seq').execute();
      for (const [i, r] of rows.entries()) {
        assert.deepEqual(Buffer.from(after[i]!.leaf_hash!), Buffer.from(tree.nodes.find((n) => n.level === 0 && n.index === i)!.hash), `${r.id}: its leaf hash is in its row`);
      }
      assert.equal(after.at(-1)!.leaf_hash, null, 'an event not yet sequenced is left to the sequencer');
      const left = await sql<{ n: number }>`select count(*) as n from audit_nodes where level = 0`.execute(db);
      assert.equal(Number(left.rows[0]!.n), 0, 'no level-0 node remains');
      const stored = await sql<{ n: number }>`select count(*) as n from audit_nodes`.execute(db);
      assert.equal(Number(stored.rows[0]!.n), tree.nodes.filter((n) => n.level > 0).length, 'every larger subtree stays');

      // Every leaf's inclusion proof, read as the proof route reads it, verifies against the root.
      for (let i = 0; i < rows.length; i++) {
        const plan = planInclusion(i, rows.length);
        const path = assemble(plan, readerFromNodes(await readNodes(db, plan.nodes)));
        assert.equal(verifyInclusion(leafHashOfStoredEvent(rows[i]!), i, rows.length, path, tree.root), true, `leaf ${i}`);
      }
      await up(db, dialect); // run again: nothing changes, nothing fails
      assert.equal((await db.selectFrom('audit_events').select('leaf_hash').where('leaf_hash', 'is not', null).execute()).length, rows.length);
    } finally { await ts.cleanup(); }
  });
}
