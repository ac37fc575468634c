// Events written with their leaf hash (migration 0605) and events written without one (before the
// migration) are sequenced alike: the tree's leaf for every event is the hash of its stored text.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { leafHashOfStoredEvent } from '../../src/domain/auditlog/leaf.ts';
import { readNodes } from '../../src/services/auditlog/log.ts';
import { newId } from '../../src/lib/ids.ts';
import { backends } from '../support/backends.ts';
import { addEvents, startAuditService, type AuditService } from './support.ts';

const hex = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString('hex'));

for (const backend of backends()) {
  describe(`stored leaf hashes (${backend.name})`, () => {
    let a: AuditService;
    before(async () => { a = await startAuditService(backend, 'none'); });
    after(async () => { await a.stop(); });

    test('an event is written with the leaf hash of its text; one written without is hashed from its text when sequenced', async () => {
      const db = a.svc.ts.store.db;
      const written = await addEvents(a.svc.ts.store, a.svc.projectId, 3);
      // As a row written before migration 0605 was: no leaf hash.
      const legacy = newId('aud');
      await sql`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index)
        values (${legacy}, ${a.svc.projectId}, 'test', 'system', ${new Date().toISOString()}, '{"n":"legacy \\" row"}', null)`.execute(db);
      const more = await addEvents(a.svc.ts.store, a.svc.projectId, 2);

      const rows = await db.selectFrom('audit_events').selectAll().where('id', 'in', [...written, legacy, ...more]).execute();
      for (const r of rows) {
        assert.equal(hex(r.leaf_hash), r.id === legacy ? null : hex(leafHashOfStoredEvent(r)), `${r.id}: stored with the hash of its own text`);
      }

      await a.svc.auditLog.tick({ force: true });
      const ours = await db.selectFrom('audit_events').selectAll().where('id', 'in', [...written, legacy, ...more]).where('leaf_index', 'is not', null).execute();
      assert.equal(ours.length, 6, 'every event sequenced, the legacy one included');
      // The tree's leaves as proofs read them (readNodes: from the event's row, decision 0603).
      const leaves = await readNodes(db, ours.map((r) => ({ level: 0, index: Number(r.leaf_index) })));
      assert.equal(leaves.length, 6);
      for (const r of ours) {
        const leaf = leaves.find((l) => l.index === Number(r.leaf_index))!;
        assert.equal(hex(leaf.hash), hex(leafHashOfStoredEvent(r)), `${r.id}: the tree's leaf is the hash of the stored text`);
      }
    });
  });
}
