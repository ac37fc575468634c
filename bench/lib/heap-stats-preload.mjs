// Preloaded into a Gavel server by bench/memory-split.ts (`--import`, which every thread of the
// process runs, the writer's too): once a second each thread writes its V8 heap statistics to
// HEAP_STATS_DIR/<pid>-<threadId>.json, so both heaps can be read beside /proc/<pid>/smaps.
// Plain JavaScript: a .ts preload would load Node's type stripper into both threads (about 4 MB each).
import { threadId } from 'node:worker_threads';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { writeFileSync } from 'node:fs';

const dir = process.env.HEAP_STATS_DIR;
if (dir) {
  const file = `${dir}/${process.pid}-${threadId}.json`;
  const write = () => writeFileSync(file, JSON.stringify({ heap: getHeapStatistics(), spaces: getHeapSpaceStatistics() }));
  setInterval(write, 1000).unref();
}
