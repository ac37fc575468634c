// The SQLite dialect's lock and durability decisions on a real database file: a statement refused
// with SQLITE_BUSY is retried until the lock is released or its deadline passes, a transaction holds
// the write lock from its BEGIN, and only writes that leave no transaction open wait for a flush.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import BetterSqlite3 from 'better-sqlite3';
import { backends } from '../support/backends.ts';
import { openStore } from '../../src/store/store.ts';
import { retryWhileBusy } from '../../src/store/sqlite/dialect.ts';
import { sql } from 'kysely';

const sqlite = backends().find((b) => b.name === 'sqlite')!;

/** A second connection that holds the database's write lock until released. */
function holdWriteLock(file: string) {
  const other = new BetterSqlite3(file, { timeout: 0 });
  other.exec('begin immediate');
  return { release() { if (other.open) { other.exec('commit'); other.close(); } } };
}

test('retryWhileBusy: a statement refused by a lock held elsewhere runs once the lock is released', async () => {
  const ts = await sqlite.open();
  const mine = new BetterSqlite3(ts.store.file!, { timeout: 0 });
  const lock = holdWriteLock(ts.store.file!);
  try {
    let refusals = 0;
    const result = await retryWhileBusy(() => {
      try { return mine.prepare("insert into settings (key, value) values ('busy', 'x')").run().changes; } catch (error) {
        if (++refusals === 1) setImmediate(() => lock.release());
        throw error;
      }
    }, 10_000);
    assert.equal(result, 1);
    assert.equal(refusals, 1);
  } finally { lock.release(); mine.close(); await ts.cleanup(); }
});

test('retryWhileBusy: past its deadline it fails with SQLITE_BUSY; other errors fail at once', async () => {
  const ts = await sqlite.open();
  const mine = new BetterSqlite3(ts.store.file!, { timeout: 0 });
  const lock = holdWriteLock(ts.store.file!);
  try {
    let tries = 0;
    // A 20 ms deadline allows a few dozen tries at most (the waits are timers); a retry that never
    // gave up would see the lock released at the 200th and succeed, failing the test instead of hanging it.
    await assert.rejects(retryWhileBusy(() => { if (++tries === 200) lock.release(); return mine.exec('begin immediate'); }, 20), { code: 'SQLITE_BUSY' });
    assert.ok(tries >= 2, `retried before giving up: ${tries} tries`);
    let failures = 0;
    await assert.rejects(retryWhileBusy(() => { failures++; throw Object.assign(new Error('constraint'), { code: 'SQLITE_CONSTRAINT' }); }, 10_000), /constraint/);
    assert.equal(failures, 1);
  } finally { lock.release(); mine.close(); await ts.cleanup(); }
});

test('retryWhileBusy: its deadline is timed on the monotonic clock, so a wall clock stepped forward does not end it', async () => {
  const wall = Date.now;
  let tries = 0;
  try {
    const result = await retryWhileBusy(() => {
      // An hour's step forward between the first refusal and the next try: no time has passed.
      if (++tries === 2) Date.now = () => wall() + 3_600_000;
      if (tries < 4) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
      return 'ran';
    }, 10_000);
    assert.equal(result, 'ran');
  } finally { Date.now = wall; }
});

test('a SQLite transaction holds the write lock from its BEGIN, before its first statement', async () => {
  const ts = await sqlite.open();
  const other = new BetterSqlite3(ts.store.file!, { timeout: 0 });
  try {
    // Deferred, two transactions that read then write could each hold a snapshot the other's write invalidates.
    await ts.store.transaction(async () => {
      assert.throws(() => other.exec('begin immediate'), { code: 'SQLITE_BUSY' });
    });
    other.exec('begin immediate');
    other.exec('commit');
  } finally { other.close(); await ts.cleanup(); }
});

test('on a store that flushes its commits, a read outside a transaction does not wait for a flush', async () => {
  const ts = await sqlite.open();
  let flushes = 0;
  const store = openStore({ kind: 'sqlite', file: ts.store.file!, durable: async () => { flushes++; } });
  try {
    await store.db.selectFrom('settings').select('key').execute();
    assert.equal(flushes, 0);
    await store.db.insertInto('settings').values({ key: 'flushed', value: 'x' }).execute();
    assert.equal(flushes, 1);
  } finally { await store.close(); await ts.cleanup(); }
});

test('SQLite connections enforce foreign keys, and the reader connection refuses writes', async () => {
  const ts = await sqlite.open();
  try {
    await assert.rejects(
      ts.store.db.insertInto('memberships').values({ project_id: 'no-such-project', principal_id: 'no-such-principal', created_at: new Date().toISOString() }).execute(),
      { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' },
    );
    assert.throws(() => ts.store.reader!.prepare("insert into settings (key, value) values ('via-reader', 'x')").run(), { code: 'SQLITE_READONLY' });
  } finally { await ts.cleanup(); }
});

test('a transaction SQLite ended itself (the disk full) fails with that error, not with its ROLLBACK\'s "no transaction is active"', async () => {
  const ts = await sqlite.open();
  try {
    // A database capped at its current size stands in for a full disk: the same SQLITE_FULL.
    const pages = Number((await sql<{ page_count: number }>`pragma page_count`.execute(ts.store.db)).rows[0]!.page_count);
    await sql.raw(`pragma max_page_count = ${pages + 2}`).execute(ts.store.db);
    await assert.rejects(ts.store.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 100; i++) await trx.insertInto('settings').values({ key: `fill-${i}`, value: 'x'.repeat(4000) }).execute();
    }), { code: 'SQLITE_FULL' });
    assert.equal((await ts.store.db.selectFrom('settings').select('key').where('key', 'like', 'fill-%').execute()).length, 0);
  } finally { await ts.cleanup(); }
});
