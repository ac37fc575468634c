// A server that stops gracefully leaves every event it recorded sequenced and under a signed,
// witnessed checkpoint: proofs of its last events need not wait for the next start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { latestCheckpoint } from '../../src/services/auditlog/checkpointer.ts';
import { addEvents, startAuditService } from './support.ts';

for (const backend of backends()) {
  test(`stopping signs and witnesses a last checkpoint over every event (${backend.name})`, async () => {
    // Ticks a minute apart: nothing would checkpoint these events before the stop.
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    const close = a.svc.close.bind(a.svc);
    try {
      await addEvents(store, a.svc.projectId, 5);
      const before = await latestCheckpoint(store.db);
      await close();
      const state = await store.db.selectFrom('audit_log_state').select('size').executeTakeFirstOrThrow();
      const unsequenced = await store.db.selectFrom('audit_events').select('id').where('leaf_index', 'is', null).execute();
      assert.deepEqual(unsequenced, [], 'every event has its leaf');
      const after = await latestCheckpoint(store.db);
      assert.ok(after && after.size > (before?.size ?? 0), 'a new checkpoint was signed');
      assert.equal(after.size, Number(state.size), 'it covers the whole log');
      assert.notEqual(after.witnessed_at, null, 'and the witness cosigned it');
    } finally { await a.stop(); }
  });
}
