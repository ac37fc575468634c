// The engines every store-touching test runs on: SQLite always; PostgreSQL when
// GAVEL_TEST_DATABASE_URL is set (required when GAVEL_TEST_REQUIRE_POSTGRES=1). Each store lives
// in its own temporary file or PostgreSQL schema, so concurrent test files never interfere.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { openStore, type Store, type StoreOptions } from '../../src/store/store.ts';

export interface TestStore {
  store: Store;
  options: StoreOptions;
  /** Opens another connection to the same database (a second process would do the same). */
  reopen(): Store;
  dataDir: string;
  cleanup(): Promise<void>;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  open(options?: { migrate?: boolean }): Promise<TestStore>;
}

const pgUrl = process.env.GAVEL_TEST_DATABASE_URL;
const requirePg = process.env.GAVEL_TEST_REQUIRE_POSTGRES === '1';

/** A migrated store in a fresh data directory; `dropDatabase` removes whatever lives outside it. */
async function openTestStore(options: StoreOptions, dataDir: string, migrate: boolean, dropDatabase: () => Promise<void> = async () => {}): Promise<TestStore> {
  const store = openStore(options);
  if (migrate) await migrateToLatest(store);
  const extra: Store[] = [];
  return {
    store, options, dataDir,
    reopen() { const s = openStore(options); extra.push(s); return s; },
    async cleanup() {
      for (const s of extra) await s.close();
      await store.close();
      await dropDatabase();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function pgQuery(url: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try { await c.query(text); } finally { await c.end(); }
}

const sqlite: Backend = {
  name: 'sqlite',
  async open({ migrate = true } = {}) {
    const dataDir = mkdtempSync(join(tmpdir(), 'gavel-test-'));
    return openTestStore({ kind: 'sqlite', file: join(dataDir, 'gavel.db') }, dataDir, migrate);
  },
};

const postgres = (url: string): Backend => ({
  name: 'postgres',
  async open({ migrate = true } = {}) {
    const schema = `gavel_t_${randomBytes(6).toString('hex')}`;
    await pgQuery(url, `create schema ${schema}`);
    const dataDir = mkdtempSync(join(tmpdir(), 'gavel-test-'));
    return openTestStore({ kind: 'postgres', url, schema }, dataDir, migrate, () => pgQuery(url, `drop schema ${schema} cascade`));
  },
});

export function backends(): Backend[] {
  if (pgUrl) return [sqlite, postgres(pgUrl)];
  if (requirePg) throw new Error('GAVEL_TEST_REQUIRE_POSTGRES=1 but GAVEL_TEST_DATABASE_URL is not set');
  return [sqlite];
}

/** Fails fast (and loudly) when PostgreSQL is required but does not answer. */
export async function checkPostgres(): Promise<'ok' | 'skipped'> {
  if (!pgUrl) {
    if (requirePg) throw new Error('GAVEL_TEST_REQUIRE_POSTGRES=1 but GAVEL_TEST_DATABASE_URL is not set');
    return 'skipped';
  }
  const c = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 5000 });
  await c.connect();
  await c.query('select 1');
  await c.end();
  return 'ok';
}
