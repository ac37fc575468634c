// The README's commands on a machine whose node is older than 24 (the machine CI starts from ships
// Node 20): each stops at once with one line that says what to do, not with Node 20's
// ERR_UNKNOWN_FILE_EXTENSION for a .ts script, which names no cause.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const GUARD = join(root, 'scripts/require-node24.mjs');

/** A node older than 24 on this machine (the system's), if any. */
function olderNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node', '/bin/node']) {
    if (!existsSync(candidate)) continue;
    const v = spawnSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    if (v.status === 0 && Number(v.stdout.split('.')[0]) < 24) return candidate;
  }
  return undefined;
}

test('npm ci refuses an older node by the engines field (engine-strict), before anything is installed', () => {
  assert.match(readFileSync(join(root, '.npmrc'), 'utf8'), /^engine-strict\s*=\s*true$/m);
  assert.equal(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines.node, '>=24');
});

test('the version guard passes under Node 24', () => {
  const r = spawnSync(process.execPath, [GUARD], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
});

const old = olderNode();
test('npm start, npm test and npm run build under an older node: one line naming scripts/use-node24.sh', { skip: old ? false : 'no node older than 24 on this machine' }, () => {
  const npm = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim();
  assert.ok(npm, 'npm is on PATH');
  // The older node first on PATH, as in a new shell on the machine; npm runs its scripts with it.
  const env = { ...process.env, PATH: `${dirname(old!)}:${process.env.PATH ?? ''}`, npm_config_nodedir: undefined, npm_node_execpath: undefined, NODE: undefined };
  for (const script of ['build', 'test', 'start']) {
    const r = spawnSync(old!, [npm, 'run', '--silent', script], { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
    assert.notEqual(r.status, 0, `npm run ${script} under ${old} should stop`);
    assert.match(r.stderr, /gavel needs Node\.js 24 or later, and this is v\d+\.[^:]*: run `\. scripts\/use-node24\.sh`/, `npm run ${script}:\n${r.stderr}`);
    assert.doesNotMatch(r.stderr, /ERR_UNKNOWN_FILE_EXTENSION/, `npm run ${script}`);
  }
});
