// SQLite page size (docs/decisions/0014-sqlite-pages-for-syscalls.md): a database Gavel creates has
// 4 KiB pages; one that exists (1 KiB pages, made after decision 0010) keeps its page size and works
// as before.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { openStore, type Store } from '../../src/store/store.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { NEW_DATABASE_PAGE_SIZE } from '../../src/store/sqlite/dialect.ts';
import { recordAudit } from '../../src/services/audit/record.ts';

const pageSize = (store: Store) => (store.raw!.prepare('pragma page_size').get() as { page_size: number }).page_size;

describe('SQLite page size', () => {
  test('a new database is created with 4 KiB pages, before anything is written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gavel-pages-'));
    const store = openStore({ kind: 'sqlite', file: join(dir, 'gavel.db') });
    try {
      await migrateToLatest(store);
      assert.equal(NEW_DATABASE_PAGE_SIZE, 4096);
      assert.equal(pageSize(store), 4096);
      // The file itself says so (header bytes 16-17), for every later connection.
      const other = new BetterSqlite3(join(dir, 'gavel.db'), { readonly: true });
      try { assert.equal(other.pragma('page_size', { simple: true }), 4096); } finally { other.close(); }
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an existing database keeps its page size and is migrated and written as before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gavel-pages-'));
    const file = join(dir, 'gavel.db');
    const old = new BetterSqlite3(file);
    // As versions that followed decision 0010 created them.
    old.pragma('page_size = 1024');
    old.pragma('journal_mode = WAL');
    old.exec('create table made_before (x)');
    old.close();
    const store = openStore({ kind: 'sqlite', file });
    try {
      await migrateToLatest(store);
      assert.equal(pageSize(store), 1024);
      await store.transaction((trx) => recordAudit(trx, { projectId: 'prj_x', kind: 'test', actor: 'system', data: { a: 1 } }));
      const rows = await store.db.selectFrom('audit_events').select('kind').where('project_id', '=', 'prj_x').execute();
      assert.deepEqual(rows.map((r) => r.kind), ['test']);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
