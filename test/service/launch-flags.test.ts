// Every way Gavel is launched passes the same node flags (decision 0005, heap budget; decision
// 0018, no allocation-site pretenuring; decision 0023, no incremental-marking tasks): `npm start`,
// `npm run serve` and the benchmark harness, whose figures must describe the service as users run
// it. The executable's shebang carries them all but those that do not fit in its 127 bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gavelNodeArgs } from '../../bench/lib/harness.ts';

const root = new URL('../../', import.meta.url);
const flagsOf = (command: string) => command.split(/\s+/).filter((w) => w.startsWith('--'));

/** Flags the shebang leaves out for its length; everything else must match (decision 0023). */
const NOT_IN_SHEBANG = ['--no-incremental-marking-task'];

test('the shebang, npm start, npm run serve and the benchmark harness pass the same node flags', () => {
  const shebang = readFileSync(new URL('src/cli/main.ts', root), 'utf8').split('\n')[0]!;
  assert.match(shebang, /^#!\/usr\/bin\/env -S node /);
  // The kernel reads at most 127 bytes of a shebang line on older systems; past that, flags are cut.
  assert.ok(shebang.length <= 127, `the shebang is ${shebang.length} bytes`);
  const flags = [...flagsOf(shebang), ...NOT_IN_SHEBANG];
  assert.ok(`${shebang} ${NOT_IN_SHEBANG.join(' ')}`.length > 127, 'a flag that fits belongs in the shebang');
  const scripts = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> }).scripts;
  assert.deepEqual(flagsOf(scripts.start!), flags, 'npm start');
  assert.deepEqual(flagsOf(scripts.serve!), flags, 'npm run serve');
  const saved = process.env.GAVEL_BENCH_NODE_ARGS;
  delete process.env.GAVEL_BENCH_NODE_ARGS;
  try { assert.deepEqual(gavelNodeArgs(), flags, 'bench/lib/harness.ts'); } finally { if (saved !== undefined) process.env.GAVEL_BENCH_NODE_ARGS = saved; }
  for (const flag of ['--max-semi-space-size=16', '--max-old-space-size=256', '--no-allocation-site-pretenuring', '--no-incremental-marking-task']) assert.ok(flags.includes(flag), flag);
});
