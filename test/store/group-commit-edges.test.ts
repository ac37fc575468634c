// Group commit's less travelled decisions, on the real engines (which errors are retried is in
// group-commit.test.ts): how many attempts PostgreSQL makes, a one statement that answers a falsy
// value, and where beforeUnits runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { createCommitter } from '../../src/store/group-commit.ts';

const conflict = (code: string) => Object.assign(new Error(`conflict ${code}`), { code });

for (const backend of backends()) {
  test(`group commit on ${backend.name}: a one statement that answers a falsy value has written; the work does not run`, async () => {
    const ts = await backend.open();
    try {
      const committer = createCommitter(ts.store);
      let worked = false;
      const value = await committer.run(async () => { worked = true; return 1; }, async (db) => {
        await db.insertInto('settings').values({ key: 'falsy', value: 'one statement' }).execute();
        return 0;
      });
      assert.equal(value, 0);
      assert.equal(worked, false, 'the work would write a second time what the one statement wrote');
      assert.equal(committer.commits, 1);
    } finally { await ts.cleanup(); }
  });
}

test('group commit on PostgreSQL: a unit that keeps losing deadlocks is tried five times, no more', { skip: !backends().some((b) => b.name === 'postgres') && 'PostgreSQL not configured' }, async () => {
  const ts = await backends().find((b) => b.name === 'postgres')!.open();
  try {
    const committer = createCommitter(ts.store);
    let attempts = 0;
    await assert.rejects(committer.run(async () => { attempts++; throw conflict('40P01'); }), /conflict 40P01/);
    assert.equal(attempts, 5);
    assert.equal(committer.commits, 0);
  } finally { await ts.cleanup(); }
});

test('group commit on SQLite: a batch whose one statement loses a conflict is retried as a whole', async () => {
  const ts = await backends().find((b) => b.name === 'sqlite')!.open();
  try {
    const committer = createCommitter(ts.store);
    let tries = 0;
    const value = await committer.run(async () => 'work', async (db) => {
      tries++;
      if (tries === 1) throw conflict('40P01');
      await db.insertInto('settings').values({ key: 'retried', value: 'one statement' }).execute();
      return 'one statement';
    });
    assert.equal(value, 'one statement');
    assert.equal(tries, 2);
  } finally { await ts.cleanup(); }
});

test('group commit on SQLite: beforeUnits runs first in each batch\'s transaction, and its failure fails the batch', async () => {
  const ts = await backends().find((b) => b.name === 'sqlite')!.open();
  try {
    const order: string[] = [];
    let fail = false;
    const committer = createCommitter(ts.store, {
      beforeUnits: async (trx) => {
        order.push('before');
        await trx.insertInto('settings').values({ key: `before-${order.length}`, value: 'x' }).execute();
        if (fail) throw new Error('before failed');
      },
    });
    await Promise.all([1, 2].map((i) => committer.run(async () => { order.push(`unit ${i}`); return i; })));
    assert.deepEqual(order, ['before', 'unit 1', 'unit 2']);
    assert.equal((await ts.store.db.selectFrom('settings').select('key').where('key', 'like', 'before-%').execute()).length, 1);
    fail = true;
    await assert.rejects(committer.run(async () => { order.push('unit 3'); return 3; }), /before failed/);
    assert.ok(!order.includes('unit 3'), 'no unit runs after beforeUnits failed');
    assert.equal((await ts.store.db.selectFrom('settings').select('key').where('key', 'like', 'before-%').execute()).length, 1, 'what it wrote rolled back');
  } finally { await ts.cleanup(); }
});
