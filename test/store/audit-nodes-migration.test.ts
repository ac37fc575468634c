// Migration 0602 re-keys audit_nodes from (level, idx) to (pos, level) on a log that already has
// nodes: every node survives with pos = (idx + 1) * 2^level - 1, readers find them all, and the
// new key still refuses a second node at the same (level, idx).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { up } from '../../src/store/migrations/0602_audit_nodes_append_order.ts';
import { appendLeaves, nodePos, planInclusion } from '../../src/domain/auditlog/tree.ts';
import { leafHash } from '../../src/domain/auditlog/hash.ts';
import { blob, readNodes } from '../../src/services/auditlog/log.ts';
import { columns } from '../../src/store/columns.ts';

for (const backend of backends()) {
  test(`migration 0602 keeps every audit node and its address (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const { db, dialect } = ts.store;
      // The table as migration 0600 made it, holding a real tree of 37 leaves.
      const c = columns(dialect);
      await db.schema.dropTable('audit_nodes').execute();
      await db.schema.createTable('audit_nodes').addColumn('level', c.integer, (col) => col.notNull()).addColumn('idx', c.bigint, (col) => col.notNull())
        .addColumn('hash', c.bytes, (col) => col.notNull()).addPrimaryKeyConstraint('audit_nodes_pk', ['level', 'idx'])
        .$call((t) => (dialect === 'sqlite' ? t.modifyEnd(sql`without rowid`) : t)).execute();
      const tree = appendLeaves(0, Array.from({ length: 37 }, (_, i) => leafHash(new Uint8Array([i]))), () => undefined);
      for (const n of tree.nodes) await sql`insert into audit_nodes (level, idx, hash) values (${n.level}, ${n.index}, ${blob(n.hash)})`.execute(db);

      await up(db, dialect);

      const rows = await sql<{ pos: number; level: number; idx: number }>`select pos, level, idx from audit_nodes`.execute(db);
      assert.equal(rows.rows.length, tree.nodes.length);
      for (const r of rows.rows) assert.equal(Number(r.pos), nodePos(Number(r.level), Number(r.idx)));
      // Readers take a single leaf's hash from its event (decision 0603), every larger subtree from here.
      const wanted = tree.nodes.filter((n) => n.level > 0).map((n) => ({ level: n.level, index: n.index }));
      const found = await readNodes(db, wanted);
      assert.equal(found.length, wanted.length, 'readers find every node by its address');
      for (const n of found) {
        const original = tree.nodes.find((o) => o.level === n.level && o.index === n.index)!;
        assert.deepEqual(Buffer.from(n.hash), Buffer.from(original.hash));
      }
      const plan = planInclusion(5, 37);
      const subtrees = plan.nodes.filter((n) => n.level > 0);
      assert.equal((await readNodes(db, subtrees)).length, subtrees.length, "an inclusion proof's nodes of two leaves or more are all there");
      const n0 = tree.nodes[0]!;
      await assert.rejects(sql`insert into audit_nodes (pos, level, idx, hash) values (${nodePos(n0.level, n0.index)}, ${n0.level}, ${n0.index}, ${blob(n0.hash)})`.execute(db), 'one node per address');
    } finally { await ts.cleanup(); }
  });
}
