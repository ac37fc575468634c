// A process killed in the middle of a migration on SQLite (first start, or a start after an upgrade
// that brings new migrations): the next start applies it. SQLite's DDL is transactional, and the
// store's dialect says so, so the migrator applies a migration and records it in one transaction;
// before, each statement committed alone, the kill left half a migration applied and unrecorded,
// and every later start failed on it ("table … already exists").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator, type Migration } from 'kysely/migration';
import type { Kysely } from 'kysely';
import { openStore } from '../../src/store/store.ts';

const STORE = new URL('../../src/store/store.ts', import.meta.url).href;
const KYSELY_MIGRATION = import.meta.resolve('kysely/migration');

const twoTables = (kill: boolean) => `
  const { openStore } = await import(${JSON.stringify(STORE)});
  const { Migrator } = await import(${JSON.stringify(KYSELY_MIGRATION)});
  const store = openStore({ kind: 'sqlite', file: process.env.DB });
  const up = async (db) => {
    await db.schema.createTable('first_half').addColumn('id', 'text').execute();
    await db.schema.createTable('second_half').addColumn('id', 'text').execute();
    ${kill ? "process.kill(process.pid, 'SIGKILL'); await new Promise(() => {});" : ''}
  };
  const r = await new Migrator({ db: store.db, provider: { getMigrations: async () => ({ '0001_two_tables': { up } }) } }).migrateToLatest();
  if (r.error) { console.error(String(r.error.message ?? r.error)); process.exit(1); }
  await store.close();
`;

test('SQLite: a process killed mid-migration leaves nothing half applied; the next start applies it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-migration-crash-'));
  const env = { ...process.env, DB: join(dir, 'gavel.db') };
  try {
    const killed = spawnSync(process.execPath, ['--input-type=module', '-e', twoTables(true)], { env, encoding: 'utf8' });
    assert.equal(killed.signal, 'SIGKILL', killed.stderr);

    const store = openStore({ kind: 'sqlite', file: env.DB });
    const tables = (await store.db.introspection.getTables()).map((t) => t.name);
    await store.close();
    assert.ok(!tables.includes('first_half'), `half a migration survived the kill: ${tables.join(', ')}`);

    const again = spawnSync(process.execPath, ['--input-type=module', '-e', twoTables(false)], { env, encoding: 'utf8' });
    assert.equal(again.status, 0, `the next start could not apply the migration: ${again.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('SQLite: a migration that fails midway leaves nothing of itself, nor its record', async () => {
  const store = openStore({ kind: 'sqlite', file: ':memory:' });
  try {
    const failing: Migration = { up: async (db: Kysely<any>) => {
      await db.schema.createTable('made_before_the_failure').addColumn('id', 'text').execute();
      throw new Error('boom');
    } };
    const r = await new Migrator({ db: store.db, provider: { getMigrations: async () => ({ '0001_fails': failing }) } }).migrateToLatest();
    assert.ok(r.error);
    const tables = (await store.db.introspection.getTables()).map((t) => t.name);
    assert.ok(!tables.includes('made_before_the_failure'), tables.join(', '));
  } finally {
    await store.close();
  }
});
