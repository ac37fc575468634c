// PostgreSQL: fixed statements declared prepared (store/fixed-sql.ts) run as named prepared
// statements, planned once per pooled connection; every other statement runs unnamed, as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { fixedSql, queryFixed } from '../../src/store/fixed-sql.ts';

const postgres = backends().find((b) => b.name === 'postgres');

test('PostgreSQL runs the statements declared prepared by name, and only those', { skip: postgres ? false : 'PostgreSQL not configured' }, async () => {
  const ts = await postgres!.open();
  try {
    const PREPARED = fixedSql('select ?::text as v, 1 as prepared_probe', { prepared: true });
    const PLAIN = fixedSql('select ?::text as w, 2 as plain_probe');
    const env = { dialect: 'postgres' as const };
    const listed = await ts.store.transaction(async (trx) => {
      assert.deepEqual(await queryFixed(trx, env, PREPARED, ['a']), [{ v: 'a', prepared_probe: 1 }]);
      assert.deepEqual(await queryFixed(trx, env, PREPARED, ['b']), [{ v: 'b', prepared_probe: 1 }], 'runs again under the same name, with new parameters');
      assert.deepEqual(await queryFixed(trx, env, PLAIN, ['c']), [{ w: 'c', plain_probe: 2 }]);
      // The same connection (the transaction's) lists what it has prepared.
      return (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements where statement like '%_probe'`.execute(trx)).rows;
    });
    assert.equal(listed.length, 1, JSON.stringify(listed));
    assert.equal(listed[0]!.statement, PREPARED.postgres);
    assert.match(listed[0]!.name, /^gavel_[0-9a-f]{16}$/);
  } finally {
    await ts.cleanup();
  }
});
