// Invariant 1 on PostgreSQL rests on the commit reaching disk before the answer. A database whose
// default is synchronous_commit = off would acknowledge commits a crash can lose: every connection
// of the pool raises it to on for its session (store/postgres/dialect.ts). Shown on a database of
// its own whose default is off, against a plain connection to it that keeps the default.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { sql } from 'kysely';
import { createPostgresDialect } from '../../src/store/postgres/dialect.ts';
import { Kysely } from 'kysely';

const url = process.env.GAVEL_TEST_DATABASE_URL;

test('pool connections commit with synchronous_commit on, even where the database defaults to off', { skip: !url && 'PostgreSQL not configured' }, async () => {
  const name = `gavel_sync_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
    await admin.query(`alter database ${name} set synchronous_commit = off`);
    const there = new URL(url!);
    there.pathname = `/${name}`;
    const plain = new pg.Client({ connectionString: there.href });
    await plain.connect();
    const db = new Kysely<never>({ dialect: createPostgresDialect({ url: there.href, poolSize: 3 }) });
    try {
      assert.equal((await plain.query('show synchronous_commit')).rows[0].synchronous_commit, 'off', 'the database defaults to off');
      // Several connections of the pool, each checked out for its own query.
      const seen = await Promise.all(Array.from({ length: 3 }, () => db.transaction().execute(async (trx) => {
        await sql`select pg_sleep(0.05)`.execute(trx);
        return (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(trx)).rows[0]!.synchronous_commit;
      })));
      assert.deepEqual(seen, ['on', 'on', 'on']);
    } finally { await plain.end(); await db.destroy(); }
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`).catch(() => {});
    await admin.end();
  }
});
