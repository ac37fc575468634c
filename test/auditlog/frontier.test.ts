// The sequencer's cached right edge (services/auditlog/frontier.ts) is one per process: it must be
// trusted only for the tree it was computed from, never for another log of the same size (another
// store in this process, or a database restored under it with another history).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { leafHashOfStoredEvent } from '../../src/domain/auditlog/leaf.ts';
import { verifyInclusion } from '../../src/domain/auditlog/verify.ts';
import { ensureLogState } from '../../src/services/auditlog/log.ts';
import { inclusionFromStore } from '../../src/services/auditlog/proofs.ts';
import { sequencePending } from '../../src/services/auditlog/sequencer.ts';
import { addEvents } from './support.ts';

for (const backend of backends()) {
  test(`two logs of the same size in one process: each appends to its own tree (${backend.name})`, async () => {
    const [a, b] = [await backend.open(), await backend.open()];
    try {
      for (const ts of [a, b]) await ensureLogState(ts.store);
      await addEvents(a.store, 'prj_a', 2, 'test.a');
      await sequencePending(a.store);
      await addEvents(b.store, 'prj_b', 2, 'test.b');
      await sequencePending(b.store); // the cached edge is now b's, at size 2
      await addEvents(a.store, 'prj_a', 2, 'test.a');
      await sequencePending(a.store); // a is at size 2 too, with another root
      const state = await ensureLogState(a.store);
      assert.equal(state.size, 4);
      const first = await a.store.db.selectFrom('audit_events').selectAll().where('leaf_index', '=', 0).executeTakeFirstOrThrow();
      const path = await inclusionFromStore(a.store.db, 0, 4);
      assert.ok(verifyInclusion(leafHashOfStoredEvent(first), 0, 4, path, state.root), 'leaf 0 of a proves under a\'s root');
    } finally {
      await a.cleanup();
      await b.cleanup();
    }
  });
}
