// The writer thread's heap is sized by its own resourceLimits, not by the process's
// --max-semi-space-size, which is for the HTTP thread: a set V8 flag overrides a worker's limits,
// and until session 14 the writer's young generation silently followed it (decision 0005).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { threadWriter, WRITER_YOUNG_GENERATION_MB } from '../../src/services/writer/thread.ts';
import type { GavelProcedures } from '../../src/services/writer/procedures.ts';

test("the writer thread's heap follows its own limits, whatever --max-semi-space-size the process runs with", async () => {
  // A process launched with another semi-space size than the writer's own (this file runs in its own process).
  setFlagsFromString('--max-semi-space-size=32');
  const ts = await backends().find((b) => b.name === 'sqlite')!.open();
  const writer = threadWriter<GavelProcedures>({ file: join(ts.dataDir, 'gavel.db') });
  try {
    await writer.call('auditlog.sequence', { max: 1, now: new Date() });
    const heap = await writer.heapStatistics();
    assert.ok(heap, 'the thread runs');
    // 256 MiB of old generation and the writer's young generation (280 MiB with 24). With the
    // process's 32 MiB semi-spaces the young generation alone would be 96 MiB (352 MiB in all).
    const limitMiB = heap.heap_size_limit / 2 ** 20;
    assert.ok(Math.abs(limitMiB - (256 + WRITER_YOUNG_GENERATION_MB)) <= 4, `the writer's heap limit is ${limitMiB} MiB`);
  } finally {
    await writer.close();
    await ts.cleanup();
  }
});
