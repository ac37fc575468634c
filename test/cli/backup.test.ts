// `gavel backup <file>`: a consistent copy of a served SQLite database, taken under decision load
// without touching the serving lock; the copy restored (with the same keys) serves, and its audit
// log is found rolled back as docs/audit-log.md says. README, "Backups and restores".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { backends } from '../support/backends.ts';
import { MAIN, prepareForChildren, spawnGavel } from '../support/process.ts';
import { logIdentity } from '../../src/services/auditlog/log.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { openStore } from '../../src/store/store.ts';
import { startWitness } from '../../src/witness/server.ts';

const sqlite = backends().find((b) => b.name === 'sqlite')!;

const backup = (args: string[], env: Record<string, string | undefined>) =>
  spawnSync(process.execPath, [MAIN, 'backup', ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });

/** The same, without blocking this process's event loop (the test keeps deciding meanwhile). */
const backupAsync = (args: string[], env: Record<string, string | undefined>) => new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
  const child = spawn(process.execPath, [MAIN, 'backup', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  child.once('exit', (status) => resolve({ status, stdout, stderr }));
});

test('gavel backup refuses bad input in one line, exit 2: no file, two files, an unknown flag, no database, a file that exists, a PostgreSQL URL', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-backup-'));
  try {
    const env = { GAVEL_DATA_DIR: join(dir, 'data'), GAVEL_DATABASE_URL: '' };
    const cases: [string[], Record<string, string>, RegExp][] = [
      [[], {}, /^gavel: gavel backup takes the file to write \(usage: gavel backup <file> \[--force\]\)\n$/],
      [['a.db', 'b.db'], {}, /^gavel: gavel backup takes one file, got 2 .*\n$/],
      [['a.db', '--overwrite'], {}, /^gavel: gavel backup: .*--overwrite.*\n$/],
      [[join(dir, 'copy.db')], {}, /^gavel: no SQLite database at .*gavel\.db: nothing to back up \(GAVEL_DATA_DIR\)\n$/],
      [[join(dir, 'copy.db')], { GAVEL_DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x' }, /^gavel: GAVEL_DATABASE_URL names a PostgreSQL database: back it up with pg_dump .*\n$/],
    ];
    for (const [args, extra, stderr] of cases) {
      const r = backup(args, { ...env, ...extra });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, stderr);
      assert.equal(r.stdout, '');
    }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('gavel backup copies a database an older version made, before it had an audit log (a backup before an upgrade)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-backup-'));
  try {
    // As a version with only the first migration left it.
    const store = openStore({ kind: 'sqlite', file: join(dir, 'gavel.db') });
    const core = await import('../../src/store/migrations/0001_core.ts') as { up(db: Kysely<unknown>, dialect: 'sqlite'): Promise<void> };
    const run = await new Migrator({ db: store.db, provider: { getMigrations: async () => ({ '0001_core': { up: (db) => core.up(db, 'sqlite') } }) } }).migrateToLatest();
    await store.close();
    assert.equal(run.error, undefined);
    const r = backup([join(dir, 'copy.db')], { GAVEL_DATA_DIR: dir, GAVEL_DATABASE_URL: '' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.match(r.stdout, /^backed up .*gavel\.db to .*copy\.db \(\d+ bytes, no audit log yet: a database of an older version, which gavel migrate brings up to date\); keep it with /);
    const copy = new BetterSqlite3(join(dir, 'copy.db'), { readonly: true });
    try { assert.deepEqual(copy.prepare('select name from kysely_migration').pluck().all(), ['0001_core']); } finally { copy.close(); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('gavel backup of a database it cannot read says so, naming the database, not the copy', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-backup-'));
  const data = join(dir, 'data');
  try {
    assert.equal(spawnSync(process.execPath, [MAIN, 'migrate'], { env: { ...process.env, GAVEL_DATA_DIR: data, GAVEL_DATABASE_URL: '' } }).status, 0);
    // A data directory nothing can be made in (a read-only mount, here an immutable directory) and a
    // database in WAL mode closed cleanly: SQLite cannot read it without making its -shm file.
    if (spawnSync('chattr', ['+i', data]).status !== 0) { t.skip('chattr +i is not available here (root, on a file system that has it)'); return; }
    try {
      const r = backup([join(dir, 'copy.db')], { GAVEL_DATA_DIR: data, GAVEL_DATABASE_URL: '' });
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stderr, `gavel: cannot read ${join(data, 'gavel.db')} (unable to open database file): GAVEL_DATA_DIR must be readable, and writable too while SQLite's -wal and -shm files are not beside the database\n`);
    } finally { spawnSync('chattr', ['-i', data]); }
    assert.deepEqual(readdirSync(dir).sort(), ['data'], 'no copy, no partial copy');
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('gavel backup copies a served SQLite database consistently under decision load; the copy, restored with the keys, serves and is found rolled back', async () => {
  const p = await prepareForChildren(sqlite);
  const dataDir = p.svc.ts.dataDir;
  const out = mkdtempSync(join(tmpdir(), 'gavel-backup-'));
  const store = openStore(p.svc.ts.options);
  const id = await logIdentity(store, new LocalSigner(join(dataDir, 'keys'))).finally(() => store.close());
  const witnessDir = join(out, 'witness');
  const witness = await startWitness({ dataDir: witnessDir, logs: [{ origin: id.origin, vkeys: [id.vkey] }] });
  const env = { ...p.env, GAVEL_WITNESS_URL: witness.url, GAVEL_WITNESS_VKEY: witness.publicKeyVkey, GAVEL_CHECKPOINT_INTERVAL_MS: '50', GAVEL_AUDIT_TICK_MS: '10' };
  const server = await spawnGavel(env);
  let restored: Awaited<ReturnType<typeof spawnGavel>> | undefined;
  try {
    const decide = async (url: string, pay = false) => {
      const res = await fetch(`${url}/v1/authorize`, {
        method: 'POST', headers: { ...p.key, 'content-type': 'application/json' },
        body: JSON.stringify(pay
          ? { agent: p.agent.did, permit: p.budget.jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 250, currency: 'EUR' } }
          : { agent: p.agent.did, permit: p.jws, action: 'read', resource: 'resource://docs/a' }),
      });
      assert.equal(res.status, 200);
      const body = await res.json() as { decision: string; audit_id: string };
      assert.equal(body.decision, 'ALLOW');
      return body.audit_id;
    };
    const proof = (url: string, auditId: string) => fetch(`${url}/v1/projects/${p.svc.projectId}/audit/${auditId}/proof`, { headers: p.key });
    const before: string[] = [await decide(server.url, true)];
    for (let i = 0; i < 20; i++) before.push(await decide(server.url));
    // Witnessed before the copy is taken, so the copy holds the checkpoint that proves them.
    for (let t = Date.now(); (await proof(server.url, before.at(-1)!)).status !== 200; await new Promise((r) => setTimeout(r, 20))) {
      assert.ok(Date.now() - t < 15_000, 'the decisions before the backup were not witnessed');
    }

    const file = join(out, 'gavel-backup.db');
    const during: string[] = [];
    let copying = true;
    const load = Promise.all(Array.from({ length: 4 }, async () => {
      while (copying || during.length < 300) during.push(await decide(server.url));
    }));
    while (during.length < 50) await new Promise((r) => setTimeout(r, 5));
    const answeredBefore = [...before, ...during];
    const taken = await backupAsync([file], env);
    const whileCopying = before.length + during.length - answeredBefore.length;
    copying = false;
    await load;
    assert.ok(whileCopying > 0, 'decisions were answered while the backup ran');
    assert.equal(taken.status, 0, taken.stderr);
    assert.match(taken.stdout, new RegExp(`^backed up .*gavel\\.db to ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(\\d+ bytes, an audit log of \\d+ events\\); keep it with .*keys`));
    assert.equal(statSync(file).mode & 0o777, 0o600);
    // The backup neither took nor broke the serving lock: a second server is still refused.
    await assert.rejects(spawnGavel(env), /another Gavel process is serving/);
    // A file that exists is kept unless --force.
    const again = backup([file], env);
    assert.equal(again.status, 2, again.stderr);
    assert.match(again.stderr, /^gavel: .*gavel-backup\.db exists: name another file, or give --force to replace it\n$/);

    // Decisions after the copy, witnessed as the server stops: what the restored copy lacks.
    const after = await decide(server.url, true);
    const copy = new BetterSqlite3(file, { readonly: true });
    try {
      assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
      const ids = new Set((copy.prepare('select id from audit_events').pluck().all() as string[]));
      assert.deepEqual(answeredBefore.filter((a) => !ids.has(a)), [], 'every decision answered before the backup began is in the copy');
      assert.ok(!ids.has(after), 'a decision answered after the backup is not in the copy');
      // …nor what it spent: a restore forgets budgets spent since the copy (README).
      assert.deepEqual(copy.prepare('select uses, spent_minor from permit_usage where commitment = ?').get(p.budget.commitment), { uses: 1, spent_minor: 250 });
    } finally { copy.close(); }

    await server.kill('SIGTERM');

    // Restored: the copy as gavel.db in a new data directory beside the same keys.
    const restoredDir = join(out, 'restored');
    cpSync(join(dataDir, 'keys'), join(restoredDir, 'keys'), { recursive: true });
    copyFileSync(file, join(restoredDir, 'gavel.db'));
    restored = await spawnGavel({ ...env, GAVEL_DATA_DIR: restoredDir });
    const banner = restored.lines.join('\n');
    assert.match(banner, /^Warning: the audit log was rolled back \(found .*\): the witness holds a checkpoint of size \d+, larger than the log/m);
    // What else the older copy forgot is said where the operator looks (backup/restore audit, session 53).
    assert.match(banner, /forgotten what was written since it was taken: budgets and use counts spent/);
    assert.match(banner, /a nonce used since would call its merchant again/);
    assert.match(banner, /restore the newest copy of the database/);
    assert.ok((await decide(restored.url)).length > 0, 'the restored copy serves decisions');
    const kept = await proof(restored.url, before[0]!);
    assert.equal(kept.status, 200, 'what the witness cosigned before the copy still proves');
    // …offline too, with the log's and the witness's public keys alone.
    writeFileSync(join(out, 'proof.json'), await kept.text());
    const verified = spawnSync(process.execPath, [MAIN, 'audit', 'verify', join(out, 'proof.json'), '--log-key', id.vkey, '--witness-key', witness.publicKeyVkey], { encoding: 'utf8' });
    assert.equal(verified.status, 0, verified.stdout + verified.stderr);
    assert.match(verified.stdout, /^VERIFIED/);
    const lost = await proof(restored.url, after);
    assert.equal(lost.status, 404);
    assert.match((await lost.json() as { detail: string }).detail, /the log was rolled back since/);
  } finally {
    await restored?.kill('SIGTERM');
    await server.kill('SIGKILL');
    await witness.close().catch(() => {});
    await p.svc.stop();
    rmSync(out, { recursive: true, force: true });
  }
});

test('gavel backup --force replaces a file that exists, and never the database itself or a directory; a copy it cannot write is named', async () => {
  const p = await prepareForChildren(sqlite);
  const out = mkdtempSync(join(tmpdir(), 'gavel-backup-'));
  try {
    const file = join(out, 'old.db');
    writeFileSync(file, 'an older backup');
    const r = backup([file, '--force'], p.env);
    assert.equal(r.status, 0, r.stderr);
    const copy = new BetterSqlite3(file, { readonly: true });
    try { assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok'); } finally { copy.close(); }
    const self = backup([join(p.svc.ts.dataDir, 'gavel.db'), '--force'], p.env);
    assert.equal(self.status, 2, self.stderr);
    assert.match(self.stderr, /^gavel: .*gavel\.db is the database itself.*\n$/);
    // A place the copy cannot be written is named as the copy's, not the database's.
    const nowhere = backup(['/proc/gavel-backup.db'], p.env);
    assert.equal(nowhere.status, 2, nowhere.stderr);
    assert.match(nowhere.stderr, /^gavel: cannot write \/proc\/gavel-backup\.db \(unable to open database.*\)\n$/);
    // A directory is no file to write, --force or not (an empty name is the current directory).
    for (const args of [[out], [out, '--force'], ['', '--force']]) {
      const dir = backup(args, p.env);
      assert.equal(dir.status, 2, `${args.join(' ')}: ${dir.stderr}`);
      assert.match(dir.stderr, /^gavel: \/.* is a directory: name a file to write the copy to, such as \/.*\/gavel-backup\.db\n$/, args.join(' '));
    }
    assert.deepEqual(readdirSync(out), ['old.db'], 'nothing was written in it');
  } finally {
    await p.svc.stop();
    rmSync(out, { recursive: true, force: true });
  }
});

// A backup stopped mid-copy (SIGTERM, Ctrl-C: the copy is synchronous, so the signal kills the
// process) leaves its `<file>.<pid>.<hex>.partial` behind, as large as the database. The next backup
// to that file removes those whose writer is gone, as a key's loader does (lib/key-file.ts), and
// never one that may still be written.
test('gavel backup removes the partial copies stopped backups left beside its file, and keeps any that may still be written', async () => {
  const ts = await sqlite.open();
  const out = mkdtempSync(join(tmpdir(), 'gavel-backup-partials-'));
  try {
    await ts.store.close();
    const exited = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => exited.once('exit', resolve));
    const partial = (pid: number, ageMs: number, hex: string) => {
      const name = `copy.db.${pid}.${hex}.partial`;
      writeFileSync(join(out, name), 'SQLite format 3\0');
      const at = (Date.now() - ageMs) / 1000;
      utimesSync(join(out, name), at, at);
      return name;
    };
    const stale = partial(exited.pid!, 120_000, 'a1b2c3d4e5f6');
    const young = partial(exited.pid!, 0, '0123456789ab');
    const running = partial(process.pid, 120_000, 'ffeeddccbbaa');
    const r = backup([join(out, 'copy.db')], { GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: undefined });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(readdirSync(out).sort(), ['copy.db', young, running].sort(), `${stale} removed`);
  } finally {
    await ts.cleanup();
    rmSync(out, { recursive: true, force: true });
  }
});

test('gavel backup killed while it writes its copy leaves no file under the name given, and the next backup removes all it left (its copy and the copy\'s SQLite journal)', async () => {
  const ts = await sqlite.open();
  const out = mkdtempSync(join(tmpdir(), 'gavel-backup-killed-'));
  try {
    await ts.store.close();
    // Enough pages that the copy is written for a while: the kill lands while its journal exists.
    const db = new BetterSqlite3(join(ts.dataDir, 'gavel.db'));
    db.exec('create table bulk (b blob)');
    db.prepare('with recursive n(i) as (select 1 union all select i + 1 from n where i < 1024) insert into bulk select randomblob(65536) from n').run();
    db.close();
    const target = join(out, 'copy.db');
    const child = spawn(process.execPath, [MAIN, 'backup', target], { env: { ...process.env, GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: undefined }, stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    while (!readdirSync(out).some((f) => f.endsWith('.partial-journal')) && child.exitCode === null) await new Promise((r) => setTimeout(r, 1));
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL', 'killed while writing its copy');
    const left = readdirSync(out);
    assert.ok(!left.includes('copy.db'), `nothing under the name given: ${left.join(', ')}`);
    assert.ok(left.some((f) => f.endsWith('.partial')), left.join(', '));
    // A minute later (the age below which a partial copy may still be being written).
    const at = (Date.now() - 120_000) / 1000;
    for (const f of left) utimesSync(join(out, f), at, at);
    const r = backup([target], { GAVEL_DATA_DIR: ts.dataDir, GAVEL_DATABASE_URL: undefined });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(readdirSync(out), ['copy.db']);
  } finally {
    await ts.cleanup();
    rmSync(out, { recursive: true, force: true });
  }
});
