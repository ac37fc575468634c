// The benchmarks' reading of a server's resident memory (bench/lib/harness.ts: residentMb), which
// issue 5's memory target is judged by: the process's own VmRSS in MB, and NaN once it is gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { residentMb } from '../../bench/lib/harness.ts';

test('residentMb reads a live process in MB, as the kernel counts it, and NaN for one that has exited', () => {
  // 64 MiB touched after the first reading must show in the second, in MB and not in kB or pages.
  const before = residentMb(process.pid);
  const held = Buffer.alloc(64 * 1024 * 1024, 1);
  const after = residentMb(process.pid);
  assert.ok(before > 1 && before < 4096, `a plausible size in MB: ${before}`);
  assert.ok(after - before > 56 && after - before < 96, `64 MiB more read as ${after - before} MB`);
  assert.equal(held[held.length - 1], 1);
  const exited = spawnSync(process.execPath, ['-e', '0']).pid;
  assert.ok(Number.isNaN(residentMb(exited)));
});
