import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { createCommitter } from '../../src/store/group-commit.ts';

for (const backend of backends()) {
  test(`group commit on ${backend.name}: units commit together, a failing unit rolls back alone`, async () => {
    const ts = await backend.open();
    try {
      const committer = createCommitter(ts.store);
      const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => committer.run(async (trx) => {
        await trx.insertInto('settings').values({ key: `k${i}`, value: String(i) }).execute();
        if (i === 17) throw new Error('unit 17 fails');
        return i;
      })));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 49);
      assert.equal(results[17]!.status, 'rejected');
      const rows = await ts.store.db.selectFrom('settings').select('key').where('key', 'like', 'k%').execute();
      assert.equal(rows.length, 49);
      assert.ok(!rows.some((r) => r.key === 'k17'), 'the failed unit left nothing');
      if (backend.name === 'sqlite') {
        // Fifty concurrent units share far fewer commits (and fsyncs) than fifty.
        assert.ok(committer.commits < 50 && committer.commits >= 1, `commits: ${committer.commits}`);
      } else {
        assert.equal(committer.commits, 49);
      }
    } finally { await ts.cleanup(); }
  });

  test(`group commit on ${backend.name}: a unit that loses a deadlock is retried, not failed`, async () => {
    const ts = await backend.open();
    try {
      const committer = createCommitter(ts.store);
      let attempts = 0;
      const value = await committer.run(async (trx) => {
        attempts++;
        await trx.insertInto('settings').values({ key: `attempt-${attempts}`, value: 'x' }).execute();
        if (attempts < 3) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
        return 'done';
      });
      assert.equal(value, 'done');
      assert.equal(attempts, 3);
      // Only the successful attempt's writes survive.
      const rows = await ts.store.db.selectFrom('settings').select('key').where('key', 'like', 'attempt-%').execute();
      assert.deepEqual(rows.map((r) => r.key), ['attempt-3']);
      // Other errors are not retried.
      let tries = 0;
      await assert.rejects(committer.run(async () => { tries++; throw new Error('bad input'); }), /bad input/);
      assert.equal(tries, 1);
    } finally { await ts.cleanup(); }
  });
}
