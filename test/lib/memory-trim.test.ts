// A serving process hands what its threads freed back to the system (lib/memory-trim.ts): glibc
// keeps memory freed in the middle of an arena resident until malloc_trim. Each case frees 48 MB
// of native memory in 16 KiB blocks (under malloc's mmap threshold, so they come from the arena),
// keeping one block in 16 so that no run of them reaches the arena's top, and reads VmRSS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { startMemoryTrim } from '../../src/lib/memory-trim.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const glibc = process.platform === 'linux' && Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);
const MB = 2 ** 20;

/**
 * Allocates 48 MB in 16 KiB native blocks, frees 15 of every 16, and waits until V8 has freed them.
 * `peak`: VmRSS with every block allocated, which an untrimmed process keeps after the frees.
 */
async function freeInTheMiddle(): Promise<{ kept: Buffer[]; peak: number }> {
  const kept: Buffer[] = [];
  let blocks: Buffer[] | undefined = [];
  for (let i = 0; i < 3072; i++) {
    const b = Buffer.allocUnsafeSlow(16 * 1024).fill(i & 0xff); // touched: resident
    if (i % 16 === 15) kept.push(b); else blocks.push(b);
  }
  const peak = process.memoryUsage.rss();
  blocks = undefined;
  // Backing stores are freed by V8's sweeper, after the collection that finds them unreachable.
  for (let i = 0; i < 5; i++) { gc(); await sleep(20); }
  return { kept, peak };
}

test('freed memory in the middle of an arena is handed back by a trim', { skip: glibc ? false : 'glibc only' }, async () => {
  const trim = await startMemoryTrim({ intervalMs: 3_600_000, onUnavailable: (err) => assert.fail(`no trim: ${String(err)}`) });
  try {
    const { kept } = await freeInTheMiddle();
    const before = process.memoryUsage.rss();
    assert.equal(await trim.now(), true, 'glibc released memory');
    const after = process.memoryUsage.rss();
    assert.ok(before - after > 24 * MB, `VmRSS ${(before / MB).toFixed(0)} MB before the trim, ${(after / MB).toFixed(0)} MB after`);
    assert.equal(kept.length, 192);
  } finally { trim.stop(); }
});

test('the trim runs by itself every interval, and stop() ends it', { skip: glibc ? false : 'glibc only' }, async () => {
  const trim = await startMemoryTrim({ intervalMs: 100 });
  try {
    const first = await freeInTheMiddle();
    await sleep(600);
    const after = process.memoryUsage.rss();
    assert.ok(first.peak - after > 24 * MB, `VmRSS ${(first.peak / MB).toFixed(0)} MB with the blocks, ${(after / MB).toFixed(0)} MB once freed and an interval passed`);
    trim.stop();
    const second = await freeInTheMiddle();
    await sleep(600);
    const stopped = process.memoryUsage.rss();
    assert.ok(second.peak - stopped < 8 * MB, `no trim once stopped: VmRSS ${(second.peak / MB).toFixed(0)} MB with the blocks, ${(stopped / MB).toFixed(0)} MB after`);
    assert.equal(first.kept.length + second.kept.length, 384);
  } finally { trim.stop(); }
});
