// What a server creates in its data directory is its owner's alone: the database (password, key
// and session hashes), its WAL, the witness's files and the keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnGavel } from '../support/process.ts';

test('a fresh data directory holds only files and directories its owner alone can read', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'gavel-perm-')), 'data');
  const gavel = await spawnGavel({ GAVEL_DATA_DIR: dir, GAVEL_DATABASE_URL: undefined });
  try {
    const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? [join(d, e.name), ...walk(join(d, e.name))] : [join(d, e.name)]));
    const found = [dir, ...walk(dir)];
    assert.ok(found.some((f) => f.endsWith('gavel.db')) && found.some((f) => f.endsWith('gavel.db-wal')), found.join('\n'));
    for (const f of found) assert.equal(statSync(f).mode & 0o077, 0, `${f} is ${(statSync(f).mode & 0o777).toString(8)}`);
  } finally {
    await gavel.kill('SIGTERM');
    rmSync(join(dir, '..'), { recursive: true, force: true });
  }
});
