// Start-up failures an operator fixes in the environment are one line and exit 2, and a first start
// that fails after creating the administrator still hands over its password (it is printed nowhere
// else). `gavel migrate` creates the database for its owner alone, as serve does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { MAIN, databaseUrl, spawnGavel } from '../support/process.ts';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import BetterSqlite3 from 'better-sqlite3';
import { LOG_KEY } from '../../src/services/auditlog/log.ts';
import { SELF_SIGNED } from '../support/tls.ts';
import { TLSSocket } from 'node:tls';

const gavel = (args: string[], env: Record<string, string | undefined>) =>
  spawnSync(process.execPath, [MAIN, ...args], { env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_LOG_LEVEL: 'warn', ...env }, encoding: 'utf8', timeout: 60_000 });

/** A port on 127.0.0.1 another listener holds, until `close()`. */
async function takenPort(): Promise<{ port: number; close(): void }> {
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  return { port: (busy.address() as AddressInfo).port, close: () => { busy.close(); } };
}

test('a first start whose port is taken says so in one line and still gives the administrator\'s password, which then logs in', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'gavel-start-')), 'data');
  const busy = await takenPort();
  const port = busy.port;
  try {
    const failed = gavel(['serve'], { GAVEL_DATA_DIR: dir, GAVEL_PORT: String(port) });
    assert.equal(failed.status, 2, failed.stderr);
    assert.match(failed.stderr, new RegExp(`gavel: cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`));
    assert.doesNotMatch(failed.stderr, /\n\s+at /, 'no stack trace');
    const password = /printed this once and stored only as a hash; keep it:\n {2}(\S+)\n/.exec(failed.stdout)?.[1];
    assert.ok(password, failed.stdout);
    assert.match(failed.stderr, /the administrator "admin" was created with the password printed above; it stays valid and is not printed again/);
    busy.close();
    const server = await spawnGavel({ GAVEL_DATA_DIR: dir, GAVEL_DATABASE_URL: undefined });
    try {
      const login = await fetch(`${server.url}/v1/console/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'admin', password }) });
      assert.equal(login.status, 200);
    } finally { await server.kill('SIGTERM'); }
  } finally {
    busy.close();
    rmSync(join(dir, '..'), { recursive: true, force: true });
  }
});

test('an unreachable PostgreSQL and a database that does not exist are one line each, exit 2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-start-'));
  try {
    const refused = gavel(['serve'], { GAVEL_DATA_DIR: dir, GAVEL_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x' });
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, /^gavel: cannot connect to the database at 127\.0\.0\.1:1: connection refused/);
    const pgUrl = process.env.GAVEL_TEST_DATABASE_URL;
    if (pgUrl) {
      const missing = gavel(['serve'], { GAVEL_DATA_DIR: dir, GAVEL_DATABASE_URL: new URL('/gavel_no_such_database', pgUrl).toString() });
      assert.equal(missing.status, 2, missing.stderr);
      assert.match(missing.stderr, /^gavel: the database refused the connection: database "gavel_no_such_database" does not exist/);
    }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('gavel migrate creates a database its owner alone can read', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'gavel-migrate-')), 'data');
  try {
    const r = gavel(['migrate'], { GAVEL_DATA_DIR: dir });
    assert.equal(r.status, 0, r.stderr);
    for (const f of [dir, join(dir, 'gavel.db')]) assert.equal(statSync(f).mode & 0o077, 0, `${f} is ${(statSync(f).mode & 0o777).toString(8)}`);
  } finally { rmSync(join(dir, '..'), { recursive: true, force: true }); }
});

test('serve and up take no arguments: one line and exit 2, nothing started, rather than the defaults on another database', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-args-'));
  try {
    for (const command of ['serve', 'up']) {
      const r = gavel([command, '--port', '7648'], { GAVEL_DATA_DIR: join(dir, 'data') });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^gavel: gavel ${command} takes no arguments \\(got "--port 7648"\\)`));
    }
    const help = gavel(['serve', '--help'], { GAVEL_DATA_DIR: join(dir, 'data') });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^usage: gavel serve\n/);
    assert.match(help.stdout, /GAVEL_PORT/, 'its configuration');
    assert.throws(() => statSync(join(dir, 'data')), 'no data directory was made');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('every command answers --help (or -h), first or after its arguments, with its usage and exit 0, making nothing (migrate refused it as an argument)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-help-'));
  try {
    for (const args of [['serve'], ['up'], ['migrate'], ['backup'], ['reset-password'], ['witness'], ['audit'], ['audit', 'verify'], ['audit', 'consistency']]) {
      const r = gavel([...args, '--help'], { GAVEL_DATA_DIR: join(dir, 'data') });
      assert.equal(r.status, 0, `${args.join(' ')} --help: ${r.stderr}`);
      assert.match(r.stdout, /^usage: gavel /, args.join(' '));
      // The command's own usage, not the list of every command (README "Commands").
      assert.match(r.stdout, new RegExp(`^usage: gavel ${args.join(' ')}\\b`), args.join(' '));
    }
    // Asked for after other arguments too, as the audit checkers answer it, not refused as an unknown option.
    for (const args of [['serve', '--port', '7648'], ['migrate', 'now'], ['backup', 'copy.db'], ['reset-password', 'admin'], ['witness', '--port', '0'], ['audit', 'verify', 'proof.json']]) {
      for (const flag of ['--help', '-h']) {
        const r = gavel([...args, flag], { GAVEL_DATA_DIR: join(dir, 'data') });
        assert.equal(r.status, 0, `${args.join(' ')} ${flag}: ${r.stderr}`);
        assert.match(r.stdout, /^usage: gavel /, `${args.join(' ')} ${flag}`);
      }
    }
    assert.throws(() => statSync(join(dir, 'data')), 'no data directory was made');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a missing command is a usage error: bare gavel and gavel audit print their usage on stderr, exit 2; asked for, it is stdout and 0', () => {
  for (const [args, usage] of [[[], /^usage: gavel <command>/m], [['audit'], /^usage: gavel audit verify /m]] as const) {
    const r = gavel([...args], {});
    assert.equal(r.status, 2, `gavel ${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '', `gavel ${args.join(' ')}`);
    assert.match(r.stderr, /^gavel: /);
    assert.match(r.stderr, usage);
  }
  for (const args of [['help'], ['--help'], ['-h'], ['audit', 'help'], ['audit', '-h']]) {
    const r = gavel(args, {});
    assert.equal(r.status, 0, `gavel ${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stdout, /^usage: gavel /, args.join(' '));
  }
});

test('gavel --version, -v and version print package.json\'s version and exit 0, making nothing; --help names the flag', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-version-'));
  try {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v', 'version']) {
      const r = gavel([flag], { GAVEL_DATA_DIR: join(dir, 'data') });
      assert.equal(r.status, 0, `${flag}: ${r.stderr}`);
      assert.equal(r.stdout, `gavel ${version}\n`, flag);
    }
    assert.match(gavel(['--help'], {}).stdout, /^ {2}--version /m);
    assert.throws(() => statSync(join(dir, 'data')), 'no data directory was made');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a data directory blocked by a file is one line and exit 2, not a stack trace', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-blocked-'));
  try {
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    const r = gavel(['serve'], { GAVEL_DATA_DIR: file });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /^gavel: cannot create the directory .*not-a-dir: a file of that name is in the way \(GAVEL_DATA_DIR must be a directory/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
    // gavel up's witness keeps its data in <GAVEL_DATA_DIR>/witness: the setting named is still GAVEL_DATA_DIR.
    const data = join(dir, 'data');
    assert.equal(gavel(['migrate'], { GAVEL_DATA_DIR: data }).status, 0);
    writeFileSync(join(data, 'witness'), 'x');
    const up = gavel(['up'], { GAVEL_DATA_DIR: data, GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' });
    assert.equal(up.status, 2, up.stderr);
    assert.match(up.stderr, /^gavel: the local witness did not start: cannot create the directory .*data\/witness: a file of that name is in the way \(GAVEL_DATA_DIR must be a directory/);
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

/**
 * `gavel <args>` as a user whom file modes bind: root bypasses them, so as root without the
 * capabilities that do it (setpriv); undefined where that cannot be had.
 */
function gavelBoundByModes(args: string[], env: Record<string, string | undefined>) {
  const options = { env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_LOG_LEVEL: 'warn', ...env }, encoding: 'utf8' as const, timeout: 60_000 };
  if (process.getuid?.() !== 0) return spawnSync(process.execPath, [MAIN, ...args], options);
  const r = spawnSync('setpriv', ['--bounding-set=-dac_override,-dac_read_search', process.execPath, MAIN, ...args], options);
  return r.error ? undefined : r;
}

test('a SQLite database this user may not read is one line naming the file and what to do, exit 2, from backup and from every command that writes it (backup said the copy could not be written)', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-unreadable-'));
  const data = join(dir, 'data');
  const db = join(data, 'gavel.db');
  try {
    assert.equal(gavel(['migrate'], { GAVEL_DATA_DIR: data }).status, 0);
    chmodSync(db, 0o000);
    const env = { GAVEL_DATA_DIR: data, GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' };
    const backup = gavelBoundByModes(['backup', join(dir, 'copy.db')], env);
    if (!backup) { t.skip('setpriv is not available to run gavel without root\'s bypass of file modes'); return; }
    const user = userInfo().username;
    assert.equal(backup.status, 2, backup.stderr);
    assert.equal(backup.stderr, `gavel: cannot read ${db}: permission denied to this user (${user}): run gavel backup as the user that runs gavel serve and owns the file (ls -l shows it), or give this user access to it (chown, chmod 600)\n`);
    for (const [args, name] of [[['migrate'], 'gavel migrate'], [['serve'], 'gavel serve'], [['up'], 'gavel up'], [['reset-password', 'admin'], 'gavel reset-password']] as const) {
      const r = gavelBoundByModes([...args], env)!;
      assert.equal(r.status, 2, `${name}: ${r.stderr}`);
      assert.equal(r.stderr, `gavel: cannot open for reading and writing ${db}: permission denied to this user (${user}): run ${name} as the user that runs gavel serve and owns the file (ls -l shows it), or give this user access to it (chown, chmod 600)\n`);
    }
    assert.deepEqual(readdirSync(dir).sort(), ['data'], 'no copy, no partial copy');
    assert.deepEqual(readdirSync(data), ['gavel.db'], 'nothing made beside the database');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a SQLite database (or its -wal) marked immutable is one line naming the file and chattr, exit 2, from every command that writes it (it said GAVEL_DATA_DIR must be writable, or "migrating failed: attempt to write a readonly database")', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-immutable-'));
  const data = join(dir, 'data');
  const db = join(data, 'gavel.db');
  const env = { GAVEL_DATA_DIR: data, GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' };
  try {
    assert.equal(gavel(['migrate'], { GAVEL_DATA_DIR: data }).status, 0);
    // The -wal a stop that was not clean leaves beside the database.
    writeFileSync(`${db}-wal`, '');
    for (const file of [db, `${db}-wal`]) {
      if (spawnSync('chattr', ['+i', file]).status !== 0) { t.skip('chattr +i is not available here (root, on a file system that has it)'); return; }
      try {
        for (const args of [['migrate'], ['serve'], ['up'], ['reset-password', 'admin']]) {
          const r = gavel(args, env);
          assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
          assert.equal(r.stderr, `gavel: cannot open for reading and writing ${file}: the file is marked immutable or append-only, which binds root too (lsattr shows an i or an a): clear it as root (chattr -i -a ${file})\n`, args[0]);
        }
      } finally { spawnSync('chattr', ['-i', file]); }
      assert.deepEqual(readdirSync(data).sort(), ['gavel.db', 'gavel.db-wal'], 'nothing made beside the database');
    }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a SQLite database on a read-only file system is one line naming the file and the mount, exit 2, from every command that writes it (it said GAVEL_DATA_DIR must be a writable directory)', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-read-only-'));
  const data = join(dir, 'data');
  const db = join(data, 'gavel.db');
  // The data directory bound read-only onto itself in a mount namespace of the command's own.
  const readOnly = ['-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"', 'sh', data];
  try {
    assert.equal(gavel(['migrate'], { GAVEL_DATA_DIR: data }).status, 0);
    if (spawnSync('unshare', [...readOnly, 'true']).status !== 0) { t.skip('unshare and mount are not available here (root)'); return; }
    for (const args of [['migrate'], ['serve'], ['up'], ['reset-password', 'admin']]) {
      const r = spawnSync('unshare', [...readOnly, process.execPath, MAIN, ...args], { env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_LOG_LEVEL: 'warn', GAVEL_DATA_DIR: data, GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' }, encoding: 'utf8', timeout: 60_000 });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.equal(r.stderr, `gavel: cannot open for reading and writing ${db}: it is on a read-only file system: mount it read-write, or copy the data directory (GAVEL_DATA_DIR) to a writable one\n`, args[0]);
    }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

/** `gavel <args>` without blocking this process's event loop, so that several run at once. */
const gavelAsync = (args: string[], env: Record<string, string | undefined>) => new Promise<{ status: number | null; stderr: string }>((resolve) => {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  child.once('exit', (status) => resolve({ status, stderr }));
});

test('a SQLite write lock another process holds (an open BEGIN IMMEDIATE) stops migrate, serve, up and reset-password with one line saying so, exit 2, changing nothing (it said "database is locked")', async () => {
  const sqlite = backends().find((b) => b.name === 'sqlite')!;
  // A database that finished its first start (reset-password has someone to reset), and one that
  // is only migrated, for gavel up: a second server on the first would be refused its serving lock.
  const svc = await startService(sqlite);
  await svc.close();
  await svc.ts.store.close();
  const dir = mkdtempSync(join(tmpdir(), 'gavel-locked-'));
  const held: BetterSqlite3.Database[] = [];
  try {
    assert.equal(gavel(['migrate'], { GAVEL_DATA_DIR: dir }).status, 0);
    const served = join(svc.ts.dataDir, 'gavel.db');
    const migrated = join(dir, 'gavel.db');
    const migrations = (file: string) => {
      const db = new BetterSqlite3(file, { readonly: true });
      try { return db.prepare('select name from kysely_migration order by name').pluck().all(); } finally { db.close(); }
    };
    const before = [migrations(served), migrations(migrated)];
    for (const file of [served, migrated]) {
      const holder = new BetterSqlite3(file);
      holder.exec('begin immediate');
      held.push(holder);
    }
    const env = { GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' };
    const [migrate, serve, reset, up] = await Promise.all([
      gavelAsync(['migrate'], { ...env, GAVEL_DATA_DIR: svc.ts.dataDir }),
      gavelAsync(['serve'], { ...env, GAVEL_DATA_DIR: svc.ts.dataDir }),
      gavelAsync(['reset-password', 'admin'], { ...env, GAVEL_DATA_DIR: svc.ts.dataDir }),
      gavelAsync(['up'], { ...env, GAVEL_DATA_DIR: dir }),
    ]);
    const held10s = "it has held the database's write lock for over 10 s (a gavel serve, up or migrate applying migrations? an sqlite3 shell or another tool with a transaction open?): let it finish, or end its transaction, then run this again";
    for (const [name, r, file] of [['migrate', migrate, served], ['serve', serve, served], ['up', up, migrated]] as const) {
      assert.equal(r.status, 2, `${name}: ${r.stderr}`);
      assert.equal(r.stderr, `gavel: another process is writing to ${file}: ${held10s} (nothing was applied)\n`, name);
    }
    assert.equal(reset.status, 2, reset.stderr);
    assert.equal(reset.stderr, `gavel: another process is writing to the SQLite database in GAVEL_DATA_DIR: ${held10s}\n`);
    for (const holder of held.splice(0)) { holder.exec('rollback'); holder.close(); }
    assert.deepEqual([migrations(served), migrations(migrated)], before);
  } finally {
    for (const holder of held) holder.close();
    await svc.ts.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a bad configuration value stops serve and migrate with one line naming its key, exit 2, before anything is made', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-config-'));
  try {
    const data = join(dir, 'data');
    const file = join(dir, 'gavel.json');
    writeFileSync(file, JSON.stringify({ port: 7400, audit_tick_ms: 1 }));
    const merchantsFile = join(dir, 'merchants.json');
    writeFileSync(merchantsFile, JSON.stringify({ merchants: { a: {} } }));
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['serve'], { GAVEL_PORT: 'eighty' }, /^gavel: configuration GAVEL_PORT: must be an integer between 0 and 65535, got "eighty"\n$/],
      [['up'], { GAVEL_DATABASE_URL: 'mysql://db/x' }, /^gavel: configuration GAVEL_DATABASE_URL: must use postgres: or postgresql:\n$/],
      [['migrate'], { GAVEL_CONFIG: file }, new RegExp(`^gavel: configuration ${file.replace(/[.]/g, '\\.')}: audit_tick_ms: must be an integer between 5 and 60000, got 1\n$`)],
      // A merchants file that will not do, missing or wrong, is a bad setting too: nothing made first (it made the data directory and its lock).
      [['serve'], { GAVEL_MERCHANTS_FILE: join(dir, 'missing.json') }, /^gavel: configuration GAVEL_MERCHANTS_FILE: cannot read .*missing\.json/],
      [['up'], { GAVEL_MERCHANTS_FILE: merchantsFile }, /^gavel: configuration GAVEL_MERCHANTS_FILE/],
    ];
    for (const [args, env, message] of cases) {
      const r = gavel(args, { GAVEL_DATA_DIR: data, ...env });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    }
    const extra = gavel(['migrate', 'down'], { GAVEL_DATA_DIR: data });
    assert.equal(extra.status, 2, extra.stderr);
    assert.match(extra.stderr, /^gavel: gavel migrate takes no arguments \(got "down"\)/);
    assert.throws(() => statSync(data), 'no data directory was made');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a damaged signing key is one line naming its file, exit 2, and the file is left for the operator to restore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-start-'));
  try {
    assert.equal(gavel(['migrate'], { GAVEL_DATA_DIR: dir }).status, 0, 'a database beside the keys');
    mkdirSync(join(dir, 'keys'), { mode: 0o700 });
    writeFileSync(join(dir, 'keys', `${LOG_KEY}.pem`), '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2Vw', { mode: 0o600 });
    const failed = gavel(['serve'], { GAVEL_DATA_DIR: dir });
    assert.equal(failed.status, 2, failed.stderr);
    assert.match(failed.stderr, new RegExp(`^gavel: ${join(dir, 'keys', LOG_KEY)}\\.pem holds no readable private key \\(empty or damaged\\)`));
    assert.doesNotMatch(failed.stderr, /\n\s+at /, 'no stack trace');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

// A restore that moved gavel.db aside and did not put the copy in (README, "Backups and restores"):
// a first start there made a new database, project and administrator beside the old keys.
test('a SQLite database missing beside the keys of one that existed is refused by serve, up and migrate, exit 2, and none is made', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-lost-db-'));
  const db = join(dir, 'gavel.db');
  try {
    await (await spawnGavel({ GAVEL_DATA_DIR: dir, GAVEL_DATABASE_URL: undefined })).kill('SIGTERM');
    renameSync(db, join(dir, 'aside.db'));
    for (const args of [['serve'], ['up'], ['migrate']]) {
      const failed = gavel(args, { GAVEL_DATA_DIR: dir, GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' });
      assert.equal(failed.status, 2, `${args[0]}: ${failed.stderr}`);
      assert.match(failed.stderr, new RegExp(`^gavel: no database at ${db}, but ${join(dir, 'keys')} holds the signing keys of one: put the database back \\(README, "Backups and restores"\\), or move the keys aside too to start afresh\n$`));
      assert.doesNotMatch(failed.stdout, /First start/);
      assert.ok(!existsSync(db), `${args[0]} made no database`);
    }
    renameSync(join(dir, 'aside.db'), db);
    const server = await spawnGavel({ GAVEL_DATA_DIR: dir, GAVEL_DATABASE_URL: undefined });
    assert.doesNotMatch(server.lines.join('\n'), /First start/);
    await server.kill('SIGTERM');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a log whose state row is gone while it holds sequenced events is refused by serve in one line, exit 2, not a stack', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-no-state-'));
  try {
    await (await spawnGavel({ GAVEL_DATA_DIR: dir, GAVEL_DATABASE_URL: undefined })).kill('SIGTERM');
    const db = new BetterSqlite3(join(dir, 'gavel.db'));
    // A log that has sequenced (its first event given leaf 0 if the short run sequenced none), then its row deleted.
    if (!db.prepare('select 1 from audit_events where leaf_index is not null').get()) db.prepare('update audit_events set leaf_index = 0 where seq = (select min(seq) from audit_events)').run();
    db.prepare('delete from audit_log_state').run();
    db.close();
    const failed = gavel(['serve'], { GAVEL_DATA_DIR: dir, GAVEL_PORT: '0' });
    assert.equal(failed.status, 2, failed.stderr);
    assert.match(failed.stderr, /^gavel: the audit log's state row \(audit_log_state\) is missing while the log holds sequenced events or checkpoints: [^\n]*\n$/);
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('gavel up whose witness port is taken says so in one line naming GAVEL_WITNESS_PORT, exit 2', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-witness-port-'));
  const busy = await takenPort();
  try {
    const port = busy.port;
    const r = gavel(['up'], { GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_PORT: '0', GAVEL_WITNESS_PORT: String(port) });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, `gavel: the local witness did not start: cannot listen on 127.0.0.1:${port}: the port is in use (GAVEL_WITNESS_PORT)\n`);
  } finally {
    busy.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('gavel up whose witness is killed before it listens names the signal, exit 2 (it said "it exited with null")', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-witness-killed-'));
  try {
    // Preloaded into gavel up and its children alike: only the witness kills itself.
    const preload = join(dir, 'kill-witness.mjs');
    writeFileSync(preload, "if (process.argv[2] === 'witness') process.kill(process.pid, 'SIGKILL');\n");
    const r = gavel(['up'], { GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0', NODE_OPTIONS: `--import ${preload}` });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, "gavel: the local witness did not start: it was killed by SIGKILL (a kill -9, or the kernel's out-of-memory killer: `dmesg` or `journalctl -k` lists its kills; if memory is short, give the host more)\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('gavel up given one port for the service and its witness refuses it by name before anything is made, exit 2', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-one-port-'));
  // A port held here, so that no start, right or wrong, listens on a fixed one.
  const busy = await takenPort();
  try {
    // The witness listened first, so the service failed on its own port after creating the administrator.
    const r = gavel(['up'], { GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_PORT: String(busy.port), GAVEL_WITNESS_PORT: String(busy.port) });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, `gavel: configuration GAVEL_WITNESS_PORT: is GAVEL_PORT's port too (${busy.port}): gavel up runs its local witness on a port of its own\n`);
    assert.throws(() => statSync(join(dir, 'data')), 'no data directory was made');
  } finally {
    busy.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('gavel up (npm start) that fails says why in one line, exit 2: its port taken (once its witness runs), a merchants file missing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-up-fails-'));
  const busy = await takenPort();
  try {
    const port = busy.port;
    const taken = gavel(['up'], { GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_PORT: String(port), GAVEL_WITNESS_PORT: '0' });
    assert.equal(taken.status, 2, taken.stderr);
    assert.match(taken.stderr, new RegExp(`gavel: cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`));
    const missing = join(dir, 'no-such-merchants.json');
    const merchants = gavel(['up'], { GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0', GAVEL_MERCHANTS_FILE: missing });
    assert.equal(merchants.status, 2, merchants.stderr);
    assert.match(merchants.stderr, /^gavel: configuration GAVEL_MERCHANTS_FILE: cannot read /);
  } finally {
    busy.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a data directory that cannot be made where a path leads nowhere (a symlink to a volume not mounted) is one line and exit 2, not a stack trace', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-nowhere-'));
  try {
    symlinkSync(join(dir, 'volume-not-mounted', 'gavel'), join(dir, 'data'));
    for (const command of ['serve', 'migrate']) {
      const r = gavel([command], { GAVEL_DATA_DIR: join(dir, 'data', 'db') });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /^gavel: cannot create the directory .*data\/db: a directory on its path leads nowhere or cannot be written \(a symlink to nothing, a read-only file system; GAVEL_DATA_DIR must be a directory, or a path where one can be made\)\n$/);
    }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

for (const backend of backends()) {
  test(`a database a newer version migrated stops serve, up and migrate with one line saying what to do, exit 2 (${backend.name})`, async () => {
    // What an older build meets after a rollback: the newer one's migration recorded, unknown here.
    const ts = await backend.open();
    try {
      await sql`insert into kysely_migration (name, timestamp) values ('9998_from_a_newer_version', ${new Date().toISOString()})`.execute(ts.store.db);
      const env = { GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(ts.options), GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' };
      for (const command of ['serve', 'up', 'migrate']) {
        const r = gavel([command], env);
        assert.equal(r.status, 2, `${command}: ${r.stderr}`);
        assert.equal(r.stderr, 'gavel: the database was migrated by a newer version of Gavel (migrations this version does not know: 9998_from_a_newer_version): run that version or a later one, or restore a backup taken before the upgrade (README, "Upgrades and rollbacks")\n', command);
      }
    } finally { await ts.cleanup(); }
  });
}

for (const backend of backends()) {
  // A data directory whose keys are not the ones the database recorded (on PostgreSQL one of its own
  // beside another instance's database; on SQLite a database whose keys were lost): the refused start
  // made a checkpoint-log.pem there that no database accepts, and kept it.
  test(`a start refused for a foreign data directory leaves the directory as it found it (${backend.name})`, async () => {
    const ts = await backend.open();
    const elsewhere = mkdtempSync(join(tmpdir(), 'gavel-foreign-'));
    try {
      await ts.store.db.insertInto('signer_keys').values({ name: LOG_KEY, public_key: Buffer.alloc(32, 7).toString('base64url'), created_at: new Date().toISOString() }).execute();
      const dirs = backend.name === 'postgres' ? [ts.dataDir, join(elsewhere, 'data')] : [ts.dataDir];
      // The SQLite serving lock's file excepted: every start makes it, and none removes it (a second
      // server would lock a new file of that name while the first held the removed one).
      const files = (dir: string) => existsSync(dir) ? readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => !f.endsWith('-serving.lock')).sort() : undefined;
      for (const dir of dirs) {
        const before = files(dir);
        for (const command of ['serve', 'up']) {
          const r = gavel([command], { GAVEL_DATA_DIR: dir, GAVEL_DATABASE_URL: databaseUrl(ts.options), GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' });
          assert.equal(r.status, 2, `${command}: ${r.stderr}`);
          assert.match(r.stderr, /^gavel: this instance's signing key "checkpoint-log" is not the one the database recorded/, command);
          assert.deepEqual(files(dir), before, `${command} in ${dir}`);
        }
      }
    } finally {
      await ts.cleanup();
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
}

test('a server at GAVEL_DATABASE_URL that closes the connection unanswered (not PostgreSQL, a pooler turning it away) is one line for every command that connects, exit 2', async () => {
  // One that answers as an HTTP server does (the API's port named by mistake), one that hangs up at once.
  const http = createServer((socket) => { socket.on('error', () => {}); socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n')); });
  const hangUp = createServer((socket) => { socket.on('error', () => {}); socket.destroy(); });
  // One that resets once the startup packet has come (the client reads ECONNRESET, not a close).
  const reset = createServer((socket) => { socket.on('error', () => {}); socket.once('data', () => socket.resetAndDestroy()); });
  const ports: number[] = [];
  for (const server of [http, hangUp, reset]) {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    ports.push((server.address() as AddressInfo).port);
  }
  const dir = mkdtempSync(join(tmpdir(), 'gavel-not-pg-'));
  try {
    for (const port of ports) {
      for (const args of [['migrate'], ['serve'], ['reset-password', 'admin']]) {
        // Not spawnSync: the servers above answer from this process's event loop.
        const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_DATABASE_URL: `postgres://u@127.0.0.1:${port}/x`, GAVEL_PORT: '0', GAVEL_LOG_LEVEL: 'warn' } });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
        const status = await new Promise<number | null>((r) => child.on('close', r));
        assert.equal(status, 2, `${args[0]} ${port}: ${stderr}`);
        assert.equal(stderr, 'gavel: the database server closed the connection (is GAVEL_DATABASE_URL\'s host and port a PostgreSQL server that accepts this client? it may also have stopped)\n', `${args[0]} ${port}`);
      }
    }
  } finally {
    http.close();
    hangUp.close();
    reset.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('TLS asked of PostgreSQL by GAVEL_DATABASE_URL and not to be had is one line naming the setting, exit 2, not a stack trace', async () => {
  // A server that declines TLS, as PostgreSQL without ssl=on does: 'N' to the SSLRequest.
  const server = createServer((socket) => { socket.once('data', () => socket.write('N')); socket.on('error', () => {}); });
  // One that accepts it ('S') and shows a certificate no CA the client trusts signed.
  const selfSigned = createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => { socket.write('S'); new TLSSocket(socket, { isServer: true, ...SELF_SIGNED }).on('error', () => {}); });
  });
  await new Promise<void>((r) => selfSigned.listen(0, '127.0.0.1', r));
  const tlsPort = (selfSigned.address() as AddressInfo).port;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'gavel-tls-'));
  try {
    const cases: [string, RegExp][] = [
      [`postgres://u@127.0.0.1:${port}/x?sslmode=require`, /^gavel: the database does not accept TLS connections, which GAVEL_DATABASE_URL asks for \(sslmode\)/],
      [`postgres://u@127.0.0.1:${tlsPort}/x?sslmode=verify-full`, /^gavel: cannot verify the database's TLS certificate \(DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate\): name the CA that signed it with sslrootcert in GAVEL_DATABASE_URL\n$/],
      // A misspelt mode is not "no TLS" to node-postgres but TLS with full verification: refused by name.
      [`postgres://u@127.0.0.1:${port}/x?sslmode=requird`, /^gavel: configuration GAVEL_DATABASE_URL: sslmode must be one of disable, no-verify, prefer, require, verify-ca, verify-full, got "requird"\n$/],
      // node-postgres reads these files when it first connects, and threw their ENOENT as a stack trace.
      [`postgres://u@127.0.0.1:${port}/x?sslrootcert=${join(dir, 'missing-ca.pem')}`, new RegExp(`^gavel: configuration GAVEL_DATABASE_URL: sslrootcert: cannot read ${join(dir, 'missing-ca.pem').replace(/[.]/g, '\\.')} \\(ENOENT`)],
    ];
    for (const [url, message] of cases) {
      for (const command of ['migrate', 'serve']) {
        // Not spawnSync: the server above answers from this process's event loop.
        const child = spawn(process.execPath, [MAIN, command], { env: { ...process.env, GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_DATABASE_URL: url, GAVEL_LOG_LEVEL: 'warn' } });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
        const status = await new Promise<number | null>((r) => child.on('close', r));
        const r = { status, stderr: stderr.replace(/^\(node:\d+\) Warning: SECURITY WARNING[^]*?--trace-warnings[^\n]*\n/, '') };
        assert.equal(r.status, 2, `${command} ${url}: ${r.stderr}`);
        assert.match(r.stderr, message);
        assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
      }
    }
  } finally {
    server.close();
    selfSigned.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
