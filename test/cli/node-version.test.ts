// gavel run by a node older than 24 (the machines ship Node 20) says so and stops, instead of dying
// of a segmentation fault when the SQLite addon, built for Node 24, is loaded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { build } from '../../scripts/build.ts';
import { nodeTooOld, REQUIRED_NODE_MAJOR } from '../../src/cli/node-version.ts';

const root = new URL('../../', import.meta.url).pathname;

test('nodeTooOld names the version it needs and the one it found, and passes 24 and later', () => {
  assert.match(nodeTooOld('20.20.2')!, /^gavel needs Node\.js 24 or later, and this is v20\.20\.2: .*use-node24\.sh/);
  assert.match(nodeTooOld('23.11.0')!, /v23\.11\.0/);
  for (const v of ['24.0.0', '24.21.0', '25.1.0', '100.0.0']) assert.equal(nodeTooOld(v), undefined, v);
  assert.equal(nodeTooOld(), undefined, 'the node running the tests is new enough');
});

/** A node on this machine older than the one gavel needs (the system's /usr/bin/node here), if any. */
function olderNode(): { path: string; version: string } | undefined {
  const candidates = new Set(['/usr/bin/node', '/usr/local/bin/node', ...(process.env.PATH ?? '').split(delimiter).map((d) => join(d, 'node'))]);
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    const v = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout?.trim().replace(/^v/, '') ?? '';
    if (Number(v.split('.')[0]) < REQUIRED_NODE_MAJOR) return { path, version: v };
  }
  return undefined;
}

const old = olderNode();
test('the built gavel under an older node refuses in one line, exit 2, having made nothing', { skip: old ? false : 'no node older than 24 on this machine' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-old-node-'));
  try {
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    build(join(root, 'src'), join(dir, 'dist'));
    for (const command of ['migrate', 'serve']) {
      const data = join(dir, `data-${command}`);
      const run = spawnSync(old!.path, [join(dir, 'dist/cli/main.js'), command], { cwd: dir, encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH, GAVEL_DATA_DIR: data } });
      assert.equal(run.status, 2, `${command}: ${run.signal ?? ''} ${run.stderr}`);
      assert.equal(run.stderr, `gavel: ${nodeTooOld(old!.version)}\n`);
      assert.equal(existsSync(data), false, 'no data directory made');
    }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
