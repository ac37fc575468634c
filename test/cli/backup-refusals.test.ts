// gavel backup's refusals leave nothing behind them (backup/restore audit, session 53):
// - `backups/` where no such directory exists wrote a file named `backups` (resolve() drops the
//   slash), where cp refuses and README says a missing directory is refused;
// - a copy that failed part way (a full disk, a size limit) left SQLite's journal of it beside the target.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { backends } from '../support/backends.ts';
import { MAIN, prepareForChildren } from '../support/process.ts';

const sqlite = backends().find((b) => b.name === 'sqlite')!;
const backup = (args: string[], env: Record<string, string | undefined>, limitKb?: number) => limitKb === undefined
  ? spawnSync(process.execPath, [MAIN, 'backup', ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 120_000 })
  : spawnSync('bash', ['-c', `ulimit -f ${limitKb}; exec "$@"`, 'bash', process.execPath, MAIN, 'backup', ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 120_000 });

test('a backup to a missing directory named with a trailing slash is refused, and no file is written in its place', async () => {
  const p = await prepareForChildren(sqlite);
  const out = mkdtempSync(join(tmpdir(), 'gavel-backup-'));
  try {
    for (const name of [`${join(out, 'nightly')}/`, `${join(out, 'nightly')}/.`]) {
      const r = backup([name], p.env);
      assert.equal(r.status, 2, `${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /^gavel: cannot write .*nightly\/\.?: it names a directory, which does not exist/);
      assert.deepEqual(readdirSync(out), []);
    }
  } finally { await p.svc.stop(); rmSync(out, { recursive: true, force: true }); }
});

test('a backup that cannot finish writing (a size limit, as a full disk) leaves nothing beside its file', async () => {
  const p = await prepareForChildren(sqlite);
  const out = mkdtempSync(join(tmpdir(), 'gavel-backup-'));
  try {
    // About 60 MB: SQLite journals a copy that large, and the limit stops it part way.
    const db = new BetterSqlite3(join(p.svc.ts.dataDir, 'gavel.db'));
    try {
      db.exec('create table probe_filler (a text); create index probe_filler_a on probe_filler (a); insert into probe_filler with recursive n(i) as (select 1 union all select i + 1 from n where i < 400000) select hex(randomblob(32)) from n');
    } finally { db.close(); }
    const r = backup([join(out, 'copy.db')], p.env, 1024);
    assert.equal(r.status, 2, `${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /^gavel: cannot write .*copy\.db \(.*\)\n$/);
    assert.deepEqual(readdirSync(out), [], 'neither the partial copy nor its SQLite journal is left');
  } finally { await p.svc.stop(); rmSync(out, { recursive: true, force: true }); }
});
