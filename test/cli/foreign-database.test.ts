// A database of another application (tables, but no record of Gavel's migrations) is refused by
// serve, up, migrate, reset-password and backup in one line naming it, exit 2, and left exactly as it
// was, with nothing made beside it; an empty one and Gavel's own still start (decision 0028).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { MAIN, databaseUrl } from '../support/process.ts';

const gavel = (args: string[], env: Record<string, string | undefined>) =>
  spawnSync(process.execPath, [MAIN, ...args], { env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_LOG_LEVEL: 'warn', GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0', ...env }, encoding: 'utf8', timeout: 60_000 });

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** Every command that opens the SQLite database (backup writes its copy outside the data directory). */
const sqliteCommands = [['serve'], ['up'], ['migrate'], ['reset-password', 'admin'], ['backup', join(tmpdir(), `gavel-foreign-copy-${process.pid}.db`)]];

test('a SQLite file of another application is refused by serve, up, migrate, reset-password and backup, exit 2, and not written to', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-foreign-'));
  const file = join(dir, 'gavel.db');
  try {
    const other = new BetterSqlite3(file);
    other.exec('create table customers (id integer primary key, name text); create table orders (id integer primary key)');
    other.close();
    const before = sha256(file);
    for (const args of sqliteCommands) {
      const r = gavel(args, { GAVEL_DATA_DIR: dir });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.equal(r.stderr, `gavel: ${file} holds tables of another application (customers, orders) and no record of Gavel's migrations (no kysely_migration table); nothing was written to it. Point GAVEL_DATA_DIR at a directory of Gavel's own (its database, gavel.db, is made at the first start), or move this file aside.\n`);
      assert.doesNotMatch(r.stdout, /First start/);
    }
    assert.equal(sha256(file), before, 'the file is as it was');
    assert.deepEqual(readdirSync(dir), ['gavel.db'], 'nothing was made beside it (no journal, no keys)');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a SQLite file of another application that also uses Kysely\'s migrator is refused as another application\'s (not as a newer Gavel\'s) by every command, and not written to', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-foreign-'));
  const file = join(dir, 'gavel.db');
  try {
    // As Kysely's migrator leaves it for that application: its record, its lock, its tables.
    const other = new BetterSqlite3(file);
    other.exec(`create table kysely_migration (name varchar(255) not null primary key, timestamp varchar(255) not null);
      create table kysely_migration_lock (id varchar(255) not null primary key, is_locked integer default 0 not null);
      insert into kysely_migration_lock values ('migration_lock', 0);
      insert into kysely_migration values ('2024_01_create_customers', '2024-01-01T00:00:00.000Z'), ('2024_02_create_orders', '2024-02-01T00:00:00.000Z');
      create table customers (id integer primary key); create table orders (id integer primary key)`);
    other.close();
    const before = sha256(file);
    for (const args of sqliteCommands) {
      const r = gavel(args, { GAVEL_DATA_DIR: dir });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.equal(r.stderr, `gavel: ${file} records the migrations of another application in its kysely_migration table (2024_01_create_customers, 2024_02_create_orders), none of them Gavel's; nothing was written to it. Point GAVEL_DATA_DIR at a directory of Gavel's own (its database, gavel.db, is made at the first start), or move this file aside.\n`);
    }
    assert.equal(sha256(file), before, 'the file is as it was');
    assert.deepEqual(readdirSync(dir), ['gavel.db'], 'nothing was made beside it (no journal, no keys)');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a SQLite file of another application in WAL mode is refused by every command with nothing made beside it (no -wal, no -shm)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-foreign-'));
  const file = join(dir, 'gavel.db');
  try {
    // Its application closed it cleanly: WAL mode in its header, no -wal or -shm beside it. A read-only
    // connection would make both, and leave them.
    const other = new BetterSqlite3(file);
    other.pragma('journal_mode = WAL');
    other.exec('create table customers (id integer primary key)');
    other.close();
    assert.deepEqual(readdirSync(dir), ['gavel.db']);
    const before = sha256(file);
    for (const args of sqliteCommands) {
      const r = gavel(args, { GAVEL_DATA_DIR: dir });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.match(r.stderr, /^gavel: .*gavel\.db holds tables of another application \(customers\)/);
      assert.deepEqual(readdirSync(dir), ['gavel.db'], `${args[0]}: nothing was made beside it`);
    }
    assert.equal(sha256(file), before, 'the file is as it was');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a directory where the SQLite database should be is refused by every command in one line, exit 2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-foreign-'));
  try {
    mkdirSync(join(dir, 'gavel.db'));
    for (const args of sqliteCommands) {
      const r = gavel(args, { GAVEL_DATA_DIR: dir });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.equal(r.stderr, `gavel: ${join(dir, 'gavel.db')} is a directory, not a SQLite database: move it aside (GAVEL_DATA_DIR's database is the file gavel.db in it)\n`, args[0]);
    }
    assert.deepEqual(readdirSync(join(dir, 'gavel.db')), [], 'left as it was');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('an empty SQLite file, and one that Gavel migrated, are migrated as before', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-foreign-'));
  try {
    new BetterSqlite3(join(dir, 'gavel.db')).close();
    const first = gavel(['migrate'], { GAVEL_DATA_DIR: dir });
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /^applied: 0001_core, /);
    const again = gavel(['migrate'], { GAVEL_DATA_DIR: dir });
    assert.equal(again.status, 0, again.stderr);
    assert.equal(again.stdout, 'the database is up to date\n');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

const postgres = backends().find((b) => b.name === 'postgres');

test('PostgreSQL: a schema of another application is refused by migrate, serve and reset-password, exit 2, and nothing is created in it', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const ts = await postgres!.open({ migrate: false });
  const { schema } = ts.options as { schema: string };
  try {
    await sql`create table invoices (id int)`.execute(ts.store.db);
    const database = (await sql<{ d: string }>`select current_database() as d`.execute(ts.store.db)).rows[0]!.d;
    for (const args of [['migrate'], ['serve'], ['reset-password', 'admin']]) {
      const r = gavel(args, { GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(ts.options) });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.equal(r.stderr, `gavel: the PostgreSQL database "${database}" (schema "${schema}") holds tables of another application (invoices) and no record of Gavel's migrations (no kysely_migration table); nothing was written to it. Point GAVEL_DATABASE_URL at a database of Gavel's own (an empty one is set up at the first start), or at a schema of its own: create schema gavel, and add ?options=-c%20search_path%3Dgavel to the URL.\n`);
    }
    const tables = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = ${schema}`.execute(ts.store.db);
    assert.deepEqual(tables.rows.map((r) => r.name), ['invoices']);
    // Once the other application's table is gone, the (now empty) schema is set up as at any first start.
    await sql`drop table invoices`.execute(ts.store.db);
    const r = gavel(['migrate'], { GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(ts.options) });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^applied: 0001_core, /);
  } finally { await ts.cleanup(); }
});

test('PostgreSQL: a search_path naming no schema that exists is refused by migrate, serve and reset-password in one line naming it, exit 2, and nothing is created', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const ts = await postgres!.open({ migrate: false });
  const { schema } = ts.options as { schema: string };
  const missing = `${schema}_missing`;
  try {
    const database = (await sql<{ d: string }>`select current_database() as d`.execute(ts.store.db)).rows[0]!.d;
    const url = databaseUrl({ ...ts.options, schema: missing } as typeof ts.options);
    for (const args of [['migrate'], ['serve'], ['reset-password', 'admin']]) {
      const r = gavel(args, { GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: url });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      // Said "migrating failed: no schema has been selected to create in" (reset-password: run gavel migrate).
      assert.equal(r.stderr, `gavel: the PostgreSQL database "${database}" has no schema on its search_path (${missing}), where Gavel's tables go; nothing was written to it. Create the schema (create schema ${missing}) or name one that exists in GAVEL_DATABASE_URL's options=-c search_path=….\n`);
    }
    const made = await sql<{ n: string }>`select nspname as n from pg_catalog.pg_namespace where nspname = ${missing}`.execute(ts.store.db);
    assert.deepEqual(made.rows, []);
  } finally { await ts.cleanup(); }
});

test('PostgreSQL: a schema of another application that also uses Kysely\'s migrator is refused as another application\'s by migrate, serve and reset-password, exit 2, and nothing is created in it', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const ts = await postgres!.open({ migrate: false });
  const { schema } = ts.options as { schema: string };
  try {
    await sql`create table kysely_migration (name varchar(255) not null primary key, timestamp varchar(255) not null)`.execute(ts.store.db);
    await sql`create table kysely_migration_lock (id varchar(255) not null primary key, is_locked integer default 0 not null)`.execute(ts.store.db);
    await sql`insert into kysely_migration_lock values ('migration_lock', 0)`.execute(ts.store.db);
    await sql`insert into kysely_migration values ('2024_01_create_invoices', '2024-01-01T00:00:00.000Z')`.execute(ts.store.db);
    await sql`create table invoices (id int)`.execute(ts.store.db);
    const database = (await sql<{ d: string }>`select current_database() as d`.execute(ts.store.db)).rows[0]!.d;
    for (const args of [['migrate'], ['serve'], ['reset-password', 'admin']]) {
      const r = gavel(args, { GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(ts.options) });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.equal(r.stderr, `gavel: the PostgreSQL database "${database}" (schema "${schema}") records the migrations of another application in its kysely_migration table (2024_01_create_invoices), none of them Gavel's; nothing was written to it. Point GAVEL_DATABASE_URL at a database of Gavel's own (an empty one is set up at the first start), or at a schema of its own: create schema gavel, and add ?options=-c%20search_path%3Dgavel to the URL.\n`);
    }
    const tables = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = ${schema} order by table_name`.execute(ts.store.db);
    assert.deepEqual(tables.rows.map((r) => r.name), ['invoices', 'kysely_migration', 'kysely_migration_lock']);
    const recorded = await sql<{ name: string }>`select name from kysely_migration`.execute(ts.store.db);
    assert.deepEqual(recorded.rows.map((r) => r.name), ['2024_01_create_invoices']);
  } finally { await ts.cleanup(); }
});

test('gavel witness refuses a witness.sqlite that is another database (a Gavel service\'s copied there, another application\'s), exit 2, writing nothing and making no key; gavel up\'s local witness too', () => {
  const vkey = 'TEST+7997405c+AQcC+FTVKf0jlTdHDY3rbevmnKxxPjigCXlVtGe6RIr6';
  const dir = mkdtempSync(join(tmpdir(), 'gavel-foreign-witness-'));
  try {
    // A Gavel service's database (WAL mode, closed cleanly), renamed to the witness's file name.
    const service = join(dir, 'service');
    assert.equal(gavel(['migrate'], { GAVEL_DATA_DIR: service }).status, 0);
    const gavelDb = join(dir, 'gavel-db');
    mkdirSync(gavelDb);
    renameSync(join(service, 'gavel.db'), join(gavelDb, 'witness.sqlite'));
    const otherApp = join(dir, 'other-app');
    mkdirSync(otherApp);
    const other = new BetterSqlite3(join(otherApp, 'witness.sqlite'));
    other.exec('create table customers (id integer primary key); create table latest (origin text)');
    other.close();
    const cases = [
      [gavelDb, /^agents, api_keys, .* and \d+ more$/, "a Gavel service's database, not its witness's"],
      [otherApp, /^customers$/, "another application's"],
    ] as const;
    for (const [dataDir, tables, whose] of cases) {
      const file = join(dataDir, 'witness.sqlite');
      const before = sha256(file);
      const r = gavel(['witness', '--data-dir', dataDir, '--port', '0', '--log', vkey], {});
      assert.equal(r.status, 2, r.stderr);
      const said = /^gavel: (.*) is not a witness database: it holds tables a witness never makes \((.*)\), (.*); nothing was written to it\. Point --data-dir at a directory of the witness's own \(its witness\.sqlite is made at the first start\), or move this file aside\n$/.exec(r.stderr);
      assert.ok(said, r.stderr);
      assert.equal(said[1], file);
      assert.match(said[2]!, tables);
      assert.equal(said[3], whose);
      assert.equal(sha256(file), before, 'the file is as it was');
      assert.deepEqual(readdirSync(dataDir), ['witness.sqlite'], 'no key, no -wal or -shm beside it');
    }
    // gavel up's witness, in <GAVEL_DATA_DIR>/witness, before it listens: said as the start's failure.
    mkdirSync(join(service, 'witness'));
    renameSync(join(otherApp, 'witness.sqlite'), join(service, 'witness', 'witness.sqlite'));
    const up = gavel(['up'], { GAVEL_DATA_DIR: service });
    assert.equal(up.status, 2, up.stderr);
    // What to do names the file and the setting gavel up has: it has no --data-dir, and pointing
    // GAVEL_DATA_DIR elsewhere would leave the service's own database behind.
    assert.equal(up.stderr, `gavel: the local witness did not start: ${join(service, 'witness', 'witness.sqlite')} is not a witness database: it holds tables a witness never makes (customers), another application's; nothing was written to it. Move this file aside: gavel up's witness keeps its own in GAVEL_DATA_DIR/witness and makes it afresh at the next start\n`);
    assert.deepEqual(readdirSync(join(service, 'witness')), ['witness.sqlite']);
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a witness.sqlite that is no SQLite database (or a damaged one) is named by its path, from gavel witness and from gavel up (up said "the SQLite database in GAVEL_DATA_DIR", the service\'s), exit 2, no key made', () => {
  const vkey = 'TEST+7997405c+AQcC+FTVKf0jlTdHDY3rbevmnKxxPjigCXlVtGe6RIr6';
  const dir = mkdtempSync(join(tmpdir(), 'gavel-damaged-witness-'));
  try {
    const witnessDir = join(dir, 'data', 'witness');
    mkdirSync(witnessDir, { recursive: true });
    const file = join(witnessDir, 'witness.sqlite');
    writeFileSync(file, Buffer.alloc(4096, 'not a database '));
    const said = `${file} is not a SQLite database, or is damaged (file is not a database): the witness keeps in it the checkpoints it cosigned; put back a copy of it, or move it aside for a witness that remembers none\n`;
    const alone = gavel(['witness', '--data-dir', witnessDir, '--port', '0', '--log', vkey], {});
    assert.equal(alone.status, 2, alone.stderr);
    assert.equal(alone.stderr, `gavel: ${said}`);
    const up = gavel(['up'], { GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' });
    assert.equal(up.status, 2, up.stderr);
    assert.equal(up.stderr, `gavel: the local witness did not start: ${said}`);
    assert.deepEqual(readdirSync(witnessDir), ['witness.sqlite'], 'no key made');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
