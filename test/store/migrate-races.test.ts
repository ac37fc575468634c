// Migrations on PostgreSQL share one database with other schemas (tenants, concurrent test files).
// Kysely's own introspector scans every schema in the database and resolves each table by name, so
// another schema's table dropped mid-scan failed our migration (seen in CI). Ours scans only the
// store's schema (store/postgres/dialect.ts). And instances started at once on an empty database
// (a deployment scaled out before its first start) migrate it once between them.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { backends } from '../support/backends.ts';
import { readdirSync } from 'node:fs';
import { migrateToLatest, MigrationError } from '../../src/store/migrate.ts';
import { openStore } from '../../src/store/store.ts';
import { databaseUrl, spawnGavel } from '../support/process.ts';

const MIGRATIONS = readdirSync(new URL('../../src/store/migrations/', import.meta.url)).filter((f) => /^\d{4}_[a-z0-9_]+\.ts$/.test(f)).map((f) => f.slice(0, -3)).sort();

const postgres = backends().find((b) => b.name === 'postgres');
const url = process.env.GAVEL_TEST_DATABASE_URL;

for (const backend of backends()) {
  test(`three instances migrating an empty database at once apply each migration once between them (${backend.name})`, async () => {
    const ts = await backend.open({ migrate: false });
    try {
      // Each store is its own pool (SQLite: its own connections), as another process's would be.
      const applied = await Promise.all([ts.store, ts.reopen(), ts.reopen()].map((s) => migrateToLatest(s)));
      // The run is one transaction under the migrator's lock: one instance applies them all, the others none.
      assert.deepEqual(applied.map((a) => a.length).sort((a, b) => a - b), [0, 0, MIGRATIONS.length]);
      assert.deepEqual(applied.flat().sort(), MIGRATIONS);
      assert.deepEqual(await migrateToLatest(ts.reopen()), []);
    } finally { await ts.cleanup(); }
  });
}

test('two gavel serve started at once on an empty PostgreSQL database both serve, with one administrator whose password works on both', { skip: !postgres || !url }, async () => {
  const ts = await postgres!.open({ migrate: false });
  const env = { GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(ts.options) };
  const servers = await Promise.all([spawnGavel(env), spawnGavel(env)]);
  try {
    // The first start prints the administrator's password on the line after its notice.
    const passwords = servers.flatMap((s) => {
      const notice = s.lines.findIndex((l) => l.startsWith('First start:'));
      return notice < 0 ? [] : [s.lines[notice + 1]!.trim()];
    });
    assert.equal(passwords.length, 1, servers.map((s) => s.lines.join('\n')).join('\n---\n'));
    for (const s of servers) {
      const login = await fetch(`${s.url}/v1/console/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'admin', password: passwords[0] }) });
      assert.equal(login.status, 200);
    }
  } finally {
    for (const s of servers) await s.kill('SIGTERM');
    await ts.cleanup();
  }
});

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
