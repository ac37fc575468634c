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
}
