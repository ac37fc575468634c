// Sequencers racing on one log through two connections (two instances on PostgreSQL, where only
// the leader should sequence but a second may still be finishing its batch): the state row is
// read under a lock (`for update` on PostgreSQL, the one write transaction on SQLite), so each
// batch extends the tree the one before it left, none is refused by the tree's unique keys, and the
// leaf indexes stay gapless with the stored root that of their leaves (invariant 9; a mutation
// audit in session 52 found the PostgreSQL lock untested).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bytesEqual } from '../../src/domain/auditlog/bytes.ts';
import { ensureLogState } from '../../src/services/auditlog/log.ts';
import { rootOfSize } from '../../src/services/auditlog/checkpointer.ts';
import { sequenceBatch } from '../../src/services/auditlog/sequencer.ts';
import { backends } from '../support/backends.ts';
import { addEvents } from './support.ts';

for (const backend of backends()) {
  test(`sequencers racing on two connections: every batch taken, indexes gapless, one tree (${backend.name})`, async () => {
    const ts = await backend.open();
    const other = ts.reopen();
    try {
      const store = ts.store;
      await ensureLogState(store);
      let written = 0;
      for (let round = 0; round < 20; round++) {
        written += (await addEvents(store, 'prj_race', 5)).length;
        const results = await Promise.allSettled([sequenceBatch(store, 3), sequenceBatch(other, 3), sequenceBatch(store, 3), sequenceBatch(other, 3)]);
        const refused = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
        assert.deepEqual(refused, [], `round ${round}: no batch refused`);
        while ((await sequenceBatch(store, 64)).count > 0) { /* the rest */ }
      }
      const rows = await store.db.selectFrom('audit_events').select('leaf_index').orderBy('leaf_index').execute();
      assert.equal(rows.length, written);
      assert.deepEqual(rows.map((r) => Number(r.leaf_index)), rows.map((_, i) => i), 'gapless, each index once');
      const state = await ensureLogState(store);
      assert.equal(state.size, written);
      assert.ok(bytesEqual(await rootOfSize(store.db, state.size), state.root), 'the stored root is the root of the stored tree');
    } finally { await ts.cleanup(); }
  });
}
