// Ad-hoc (not part of the bench suite): where a Gavel server's resident memory is, after load.
// Starts `gavel serve` (SQLite) with bench/lib/heap-stats-preload.mjs, loads it at CONNS connections
// (default 256) for SECS seconds (default 20; RATE caps the rate), and prints VmRSS beside its
// parts: each thread's V8 heap by space (committed / resident / used), the anonymous mappings of
// 256 KiB or less (V8's pages), malloc's (`[heap]` and its 64 MiB arenas) and the file-backed
// pages (the node binary). Session 49 split 231-248 MB this way (docs/performance.md).
import { readFileSync, readdirSync } from 'node:fs';
import { load, residentMb, startGavel } from './lib/harness.ts';
import { authorizeRequest, prepareProject } from './lib/fixtures.ts';
import { countFromEnv } from './lib/env-count.ts';
import { scratchDir } from './lib/scratch-dir.ts';

// Read before anything starts, so a bad value leaves no server behind.
const CONNS = countFromEnv('CONNS', 256, { max: 10_000 });
const SECS = countFromEnv('SECS', 20);
const RATE = countFromEnv('RATE', 0, { max: 1_000_000 });

const statsDir = scratchDir('gavel-heap-stats-');
const project = await prepareProject();
const preload = new URL('./lib/heap-stats-preload.mjs', import.meta.url).pathname;
const gavel = await startGavel({ GAVEL_DATA_DIR: project.dataDir, HEAP_STATS_DIR: statsDir, NODE_OPTIONS: `--import=${preload}` });
const pid = gavel.child.pid!;
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** Resident kB of the process's mappings, grouped: V8's pages, malloc's heaps, files, the rest. */
function mappings(): Record<string, number> {
  const groups: Record<string, number> = { 'anonymous, 256 KiB or less (V8 pages)': 0, 'malloc ([heap], 64 MiB arenas)': 0, 'file-backed': 0, 'other anonymous': 0 };
  let group = 'other anonymous';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const kb = (parseInt(head[2]!, 16) - parseInt(head[1]!, 16)) / 1024;
      const name = head[3]!;
      // A glibc arena is a 64 MiB reservation, split into a used (rw) part and the rest (---).
      group = name === '[heap]' || (name === '' && kb > 8192 && kb <= 65536) ? 'malloc ([heap], 64 MiB arenas)'
        : name.startsWith('/') ? 'file-backed'
          : name === '' && kb <= 256 ? 'anonymous, 256 KiB or less (V8 pages)' : 'other anonymous';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) groups[group]! += Number(rss[1]);
  }
  return groups;
}

function report(label: string): void {
  console.log(`${label}: VmRSS ${residentMb(pid).toFixed(0)} MB; ${Object.entries(mappings()).map(([k, kb]) => `${k} ${(kb / 1024).toFixed(1)} MB`).join(', ')}`);
  for (const file of readdirSync(statsDir).filter((f) => f.startsWith(`${pid}-`)).sort()) {
    const { heap, spaces } = JSON.parse(readFileSync(`${statsDir}/${file}`, 'utf8')) as { heap: Record<string, number>; spaces: { space_name: string; space_size: number; physical_space_size: number; space_used_size: number }[] };
    const thread = file.endsWith('-0.json') ? 'HTTP thread' : `thread ${file.slice(file.indexOf('-') + 1, -5)} (the writer)`;
    console.log(`  ${thread}: V8 heap ${mb(heap.total_heap_size!)} MB committed, ${mb(heap.total_physical_size!)} resident, ${mb(heap.used_heap_size!)} used; malloced ${mb(heap.malloced_memory!)} (peak ${mb(heap.peak_malloced_memory!)}), external ${mb(heap.external_memory!)}`);
    console.log(`    ${spaces.filter((s) => s.space_size > 0).map((s) => `${s.space_name} ${mb(s.space_size)}/${mb(s.physical_space_size)}/${mb(s.space_used_size)}`).join(', ')} (MB committed/resident/used)`);
  }
}

try {
  await new Promise((resolve) => setTimeout(resolve, 1500));
  report('idle');
  const r = await load({ ...authorizeRequest(gavel.url, project), connections: CONNS, duration: SECS, ...(RATE ? { overallRate: RATE } : {}) });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  report(`after ${SECS} s at ${CONNS} connections (${r.rps.toFixed(0)} decisions/s, p99 ${r.p99} ms)`);
} finally {
  await gavel.stop();
}
