// SQLite's statement cache (store/sqlite/dialect.ts) keeps statements of at most
// MAX_CACHED_PARAMETERS parameters. Each length of an `in` list is a statement of its own, and any
// caller could fill the cache with them: a page of 1 to 500 approvals, a replay's 1 to 1,000
// commitments (1,000 such statements held about 100 MB of native memory: unbounded-growth audit,
// session 53). Longer ones are prepared each time they run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import BetterSqlite3 from 'better-sqlite3';
import { MAX_CACHED_PARAMETERS, withStatementCache } from '../../src/store/sqlite/dialect.ts';

const inList = (n: number) => `select count(*) as n from t where v in (${Array(n).fill('?').join(', ')})`;

test('statements of up to MAX_CACHED_PARAMETERS parameters are cached, longer ones run uncached', () => {
  const source = withStatementCache(new BetterSqlite3(':memory:'));
  try {
    source.prepare('create table t (v integer)').run();
    source.prepare('insert into t (v) values (1), (2), (3)').run();
    const before = source.cached;
    for (let n = 1; n <= 1_000; n++) {
      const values = Array.from({ length: n }, (_, i) => i + 1);
      assert.deepEqual(source.prepare(inList(n)).get(values), { n: Math.min(n, 3) }, `${n} parameters`);
    }
    assert.equal(source.cached - before, MAX_CACHED_PARAMETERS, 'one cached statement for each list length up to the bound, none beyond');
    // The same statement again is the cached one; a longer one is prepared afresh each time, and runs.
    assert.equal(source.prepare(inList(MAX_CACHED_PARAMETERS)), source.prepare(inList(MAX_CACHED_PARAMETERS)));
    assert.notEqual(source.prepare(inList(MAX_CACHED_PARAMETERS + 1)), source.prepare(inList(MAX_CACHED_PARAMETERS + 1)));
    // The tree's insert of 32 nodes (auditlog/frontier.ts: 4 columns a node), run for every batch, stays cached.
    assert.ok(32 * 4 <= MAX_CACHED_PARAMETERS);
  } finally {
    source.close();
  }
});
