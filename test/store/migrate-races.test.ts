// Migrations on PostgreSQL share one database with other schemas (tenants, concurrent test files).
// Kysely's own introspector scans every schema in the database and resolves each table by name, so
// another schema's table dropped mid-scan failed our migration (seen in CI). Ours scans only the
// store's schema (store/postgres/dialect.ts).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { backends } from '../support/backends.ts';
import { migrateToLatest, MigrationError } from '../../src/store/migrate.ts';
import { openStore } from '../../src/store/store.ts';

const postgres = backends().find((b) => b.name === 'postgres');
const url = process.env.GAVEL_TEST_DATABASE_URL;

describe('migrations beside schemas that come and go (postgres)', { skip: !postgres || !url }, () => {
  test('migrating succeeds while other schemas full of tables are created and dropped', async () => {
    const churn = new pg.Client({ connectionString: url });
    await churn.connect();
    let stop = false;
    let dropped = 0;
    // Other schemas full of serial-keyed tables, dropped and recreated in turn: the migrator's scan
    // resolves each of their columns by name, so a drop that commits mid-scan fails that lookup.
    const standing: string[] = [];
    const create = async () => {
      const s = `gavel_churn_${randomBytes(5).toString('hex')}`;
      const tables = Array.from({ length: 100 }, (_, i) => `create table ${s}.t${i} (id serial primary key, v text)`).join(';');
      await churn.query(`create schema ${s}; ${tables}`);
      standing.push(s);
    };
    for (let i = 0; i < 8; i++) await create();
    const churning = (async () => {
      while (!stop) {
        // Tables first, then the schema: a scan may lose either a table (42P01) or a schema (3F000).
        const s = standing.shift()!;
        await churn.query(`drop table ${Array.from({ length: 100 }, (_, i) => `${s}.t${i}`).join(', ')}`);
        await churn.query(`drop schema ${s}`);
        dropped++;
        await create();
      }
      for (const s of standing) await churn.query(`drop schema ${s} cascade`);
    })();
    try {
      for (let i = 0; i < 8; i++) {
        const ts = await postgres!.open({ migrate: false });
        try {
          const applied = await migrateToLatest(ts.store);
          assert.ok(applied.includes('0001_core'));
        } finally { await ts.cleanup(); }
      }
      assert.ok(dropped > 0, 'the churn ran during the migrations');
    } finally {
      stop = true;
      await churning;
      await churn.end();
    }
  });

  test('our own schema dropped under us is still a clear MigrationError', async () => {
    const schema = `gavel_t_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`create schema ${schema}`);
      const store = openStore({ kind: 'postgres', url: url!, schema });
      try {
        await admin.query(`drop schema ${schema} cascade`);
        await assert.rejects(migrateToLatest(store), MigrationError);
      } finally { await store.close(); }
    } finally {
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    }
  });
});
