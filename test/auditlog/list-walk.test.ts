// Walking the audit event list to its end (newest first, following next_cursor) while another
// connection holds an event's commit open: every event committed before the first page is seen,
// and so is the late one, committed after a page was served with an id below that page's cursor.
// Both planes, both engines; the held transaction is a real one on a second connection.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { recordAudit } from '../../src/services/audit/record.ts';
import type { Store } from '../../src/store/store.ts';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { addEvents, startAuditService, type AuditService } from './support.ts';

interface Item { id: string; leaf_index: number | null }

for (const backend of backends()) {
  describe(`audit event list walked while an event's commit is held open (${backend.name})`, () => {
    let a: AuditService;
    let second: Store;
    before(async () => {
      a = await startAuditService(backend, 'none');
      second = a.svc.ts.reopen();
    });
    after(async () => { await a.stop(); });

    for (const plane of ['machine', 'console'] as const) {
      test(`${plane} plane: the walk holds every event committed before its first page, and the late one below its cursor`, async () => {
        const p = a.svc.projectId;
        const url = plane === 'machine' ? `/v1/projects/${p}/audit` : `/v1/console/projects/${p}/audit`;
        const headers = plane === 'machine' ? await a.svc.keyHeader(['AUDITOR']) : (await consoleMember(a.svc, ['AUDITOR'])).get;
        const get = async (query: string): Promise<{ items: Item[]; next_cursor: string | null }> => {
          const res = await a.svc.app.inject({ method: 'GET', url: `${url}?${query}`, headers });
          assert.equal(res.statusCode, 200, res.body);
          return res.json();
        };
        const before = (await addEvents(a.svc.ts.store, p, 3)).reverse();
        // Sequenced into the log: the late event will have no leaf index when it is listed.
        await a.svc.auditLog.tick({ force: true });
        // Stamped 10 s back, so its id sorts below all three (a process whose clock is behind, or
        // a transaction that took that long to commit), and held open on a second connection.
        let release!: () => void;
        const held = new Promise<void>((resolve) => { release = resolve; });
        let written!: () => void;
        const inserted = new Promise<void>((resolve) => { written = resolve; });
        const late = second.transaction(async (trx) => {
          const id = await recordAudit(trx, { projectId: p, kind: 'test.late', actor: 'system', data: { late: true }, at: new Date(Date.now() - 10_000) });
          written();
          await held;
          return id;
        });
        await inserted;
        const first = await get('limit=2');
        assert.deepEqual(first.items.map((i) => i.id), before.slice(0, 2), 'the two newest committed events, newest first');
        assert.ok(first.next_cursor);
        release();
        const lateId = await late;
        const seen = [...first.items];
        for (let cursor: string | null = first.next_cursor; cursor !== null;) {
          const next = await get(`limit=2&cursor=${cursor}`);
          seen.push(...next.items);
          cursor = next.next_cursor;
        }
        const ids = seen.map((i) => i.id);
        assert.equal(new Set(ids).size, ids.length, 'no event twice');
        for (const id of before) assert.ok(ids.includes(id), `${id}, committed before the first page, is in the walk`);
        assert.ok(ids.includes(lateId), 'the event committed after the first page, below its cursor, is in the walk');
        assert.equal(seen.find((i) => i.id === lateId)!.leaf_index, null, 'listed before the log sequenced it');
      });
    }
  });
}
