// What `gavel serve` writes at start: its configuration is logged with the database's credentials
// masked (a password in the URL or in its query), and the first start's administrator password
// appears once, in the line meant for the operator, never in a log line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { databaseUrl, MAIN, spawnGavel } from '../support/process.ts';

for (const backend of backends()) {
  test(`the start's log masks the database's credentials and holds no administrator password, on ${backend.name}`, async () => {
    const ts = await backend.open({ migrate: false });
    let url = databaseUrl(ts.options);
    if (url) {
      // PostgreSQL here trusts the test's connections, so a password in the URL is carried but not checked.
      const u = new URL(url);
      u.password = 'Pw-in-the-url-9';
      u.searchParams.set('sslpassword', 'Pw-in-the-query-9');
      url = u.toString();
    }
    const server = await spawnGavel({ GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: url, GAVEL_LOG_LEVEL: 'info' });
    try {
      await new Promise((r) => setTimeout(r, 200));
      const logged = server.lines.filter((l) => l.startsWith('{'));
      const configuration = logged.find((l) => JSON.parse(l).msg === 'configuration');
      assert.ok(configuration, server.lines.join('\n'));
      // A first start migrates a new database, and says which migrations it applied (an upgrade's record).
      const migrated = logged.map((l) => JSON.parse(l) as { msg: string; migrations?: string[] }).find((l) => l.msg === 'applied database migrations');
      assert.ok(migrated?.migrations?.includes('0001_core'), server.lines.join('\n'));
      assert.doesNotMatch(server.lines.join('\n'), /Pw-in-the-/);
      const password = /printed this once and stored only as a hash; keep it:/.test(server.lines.join('\n'))
        ? server.lines[server.lines.findIndex((l) => /keep it:$/.test(l)) + 1]!.trim() : undefined;
      assert.ok(password, 'a first start prints the password');
      assert.equal(server.lines.filter((l) => l.includes(password)).length, 1, 'printed once, in its own line');
      assert.ok(!logged.some((l) => l.includes(password)));
    } finally {
      await server.kill('SIGTERM');
      await ts.cleanup();
    }
  });
}

test('a GAVEL_* variable no setting reads is warned about at start, with the setting it was perhaps meant for', async () => {
  const [sqlite] = backends();
  const ts = await sqlite!.open({ migrate: false });
  // GAVEL_PROT: a typo of GAVEL_PORT. GAVEL_TEST_*: the tests' own, never warned about.
  const server = await spawnGavel({ GAVEL_DATA_DIR: ts.dataDir, GAVEL_LOG_LEVEL: 'info', GAVEL_PROT: '7999', GAVEL_OWN_THING: '1', GAVEL_TEST_SOMETHING: '1' });
  try {
    const warned = () => server.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string; variable?: string; meant?: string }).filter((l) => l.level === 40);
    // Logged before the server listens, so before the line spawnGavel waits for.
    assert.deepEqual(warned().map((w) => [w.variable, w.meant]), [['GAVEL_OWN_THING', undefined], ['GAVEL_PROT', 'GAVEL_PORT']], server.lines.join('\n'));
    assert.match(warned()[1]!.msg, /^GAVEL_PROT is set but no setting reads it \(did you mean GAVEL_PORT\?\); it is ignored$/);
  } finally {
    await server.kill('SIGTERM');
    await ts.cleanup();
  }
});

test('gavel migrate warns about a GAVEL_* variable no setting reads as serve does, on stderr, before it migrates', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-migrate-vars-'));
  try {
    // GAVEL_DATABSE_URL: a typo that leaves the SQLite default to be migrated in its place.
    const r = spawnSync(process.execPath, [MAIN, 'migrate'], {
      env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_DATA_DIR: dir, GAVEL_DATABSE_URL: 'postgres://elsewhere/gavel', GAVEL_OWN_THING: '1', GAVEL_TEST_SOMETHING: '1' },
      encoding: 'utf8', timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, 'gavel: GAVEL_DATABSE_URL is set but no setting reads it (did you mean GAVEL_DATABASE_URL?); it is ignored\n'
      + 'gavel: GAVEL_OWN_THING is set but no setting reads it; it is ignored\n');
    assert.match(r.stdout, /^applied: 0001_core, /);
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('gavel backup and gavel reset-password warn about a GAVEL_* variable no setting reads as migrate does, on stderr, before they act', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-command-vars-'));
  try {
    const run = (args: string[]) => spawnSync(process.execPath, [MAIN, ...args], {
      env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_DATABSE_URL: 'postgres://elsewhere/gavel', GAVEL_TEST_SOMETHING: '1' },
      encoding: 'utf8', timeout: 60_000,
    });
    const warning = 'gavel: GAVEL_DATABSE_URL is set but no setting reads it (did you mean GAVEL_DATABASE_URL?); it is ignored\n';
    assert.equal(run(['migrate']).stderr, warning);
    // The typo leaves the SQLite default to be copied, and to have its password reset.
    const backup = run(['backup', join(dir, 'copy.db')]);
    assert.equal(backup.status, 0, backup.stderr);
    assert.equal(backup.stderr, warning);
    assert.match(backup.stdout, /^backed up /);
    const reset = run(['reset-password', 'admin']);
    assert.equal(reset.status, 2, reset.stderr);
    assert.equal(reset.stderr, `${warning}gavel: this installation has not finished its first start, so it has no administrator yet: start it (gavel serve, or npm start), which creates "admin" and prints its password\n`);
    // A usage mistake is told before the configuration is read, and alone.
    assert.equal(run(['backup']).stderr, 'gavel: gavel backup takes the file to write (usage: gavel backup <file> [--force])\n');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('a command that fails before it acts (a bad setting, a foreign database) still warns of a GAVEL_* variable no setting reads, first, on stderr', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-failed-vars-'));
  try {
    // The misspelling is often why it failed: here it left the SQLite default in place of the database meant.
    const run = (args: string[], env: Record<string, string>) => spawnSync(process.execPath, [MAIN, ...args], {
      env: { ...process.env, GAVEL_DATABASE_URL: undefined, GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_DATBASE_URL: 'postgres://elsewhere/gavel', GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0', ...env },
      encoding: 'utf8', timeout: 60_000,
    });
    const warning = 'gavel: GAVEL_DATBASE_URL is set but no setting reads it (did you mean GAVEL_DATABASE_URL?); it is ignored\n';
    for (const args of [['serve'], ['up'], ['migrate'], ['backup', join(dir, 'copy.db')], ['reset-password', 'admin']]) {
      const r = run(args, { GAVEL_PORT: 'abc' });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.equal(r.stderr, `${warning}gavel: configuration GAVEL_PORT: must be an integer between 0 and 65535, got "abc"\n`, args[0]);
    }
    // A start refused after the configuration is read, before the service's log exists.
    const other = join(dir, 'other');
    mkdirSync(other);
    const file = new BetterSqlite3(join(other, 'gavel.db'));
    file.exec('create table customers (id integer primary key)');
    file.close();
    for (const args of [['serve'], ['up']]) {
      const r = run(args, { GAVEL_DATA_DIR: other });
      assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`^${warning.replace(/[?()]/g, '\\$&')}gavel: .*gavel\\.db holds tables of another application \\(customers\\)`), args[0]);
    }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('serve warns when it listens beyond loopback without TLS, and not when GAVEL_PUBLIC_URL is https', async () => {
  const backend = backends()[0]!;
  for (const [publicUrl, warned] of [[undefined, true], ['https://gavel.example', false], ['HTTPS://gavel.example', false]] as const) {
    const ts = await backend.open({ migrate: false });
    const server = await spawnGavel({ GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(ts.options), GAVEL_HOST: '0.0.0.0', GAVEL_PUBLIC_URL: publicUrl });
    try {
      const said = server.lines.some((l) => l.startsWith('Warning: listening on 0.0.0.0 without TLS.'));
      assert.equal(said, warned, `${publicUrl ?? 'no GAVEL_PUBLIC_URL'}: ${server.lines.join('\n')}`);
    } finally {
      await server.kill('SIGTERM');
      await ts.cleanup();
    }
  }
});
