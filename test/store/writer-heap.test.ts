// The writer thread's heap is sized by its own resourceLimits (8 MiB of young generation), not by
// the launch lines' --max-semi-space-size=16, which is for the HTTP thread: a set V8 flag overrides a
// worker's limits, and the writer's young generation grew to 34 MB (decision 0005, session 14).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { threadWriter } from '../../src/services/writer/thread.ts';
import type { GavelProcedures } from '../../src/services/writer/procedures.ts';

test("the writer thread's heap follows its own limits, whatever --max-semi-space-size the process runs with", async () => {
  // As `npm start` and the executable's shebang launch the process (this file runs in its own process).
  setFlagsFromString('--max-semi-space-size=16');
  const ts = await backends().find((b) => b.name === 'sqlite')!.open();
  const writer = threadWriter<GavelProcedures>({ file: join(ts.dataDir, 'gavel.db') });
  try {
    await writer.call('auditlog.sequence', { max: 1, now: new Date() });
    const heap = await writer.heapStatistics();
    assert.ok(heap, 'the thread runs');
    // 256 MiB of old generation and 8 MiB of young, with V8's rounding: 268 MiB here. With the
    // process's 16 MiB semi-spaces the young generation alone would be 48 MiB (304 MiB in all).
    const limitMiB = heap.heap_size_limit / 2 ** 20;
    assert.ok(limitMiB <= 256 + 16, `the writer's heap limit is ${limitMiB} MiB`);
  } finally {
    await writer.close();
    await ts.cleanup();
  }
});
