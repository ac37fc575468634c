// Ad-hoc (not part of the bench suite): does the half-max tail come from full GCs of the HTTP
// thread or of SQLite's writer thread? Runs `gavel serve` (SQLite, or PostgreSQL in a schema of
// its own when PG_URL is set) with --trace-gc, loads it at 128 connections for WARM_SECS seconds
// (default 4), then runs an open loop at RATE decisions/s (default 7000) for SECS seconds
// (default 8). Prints p50/p99 and, for each thread, its mark-compacts during the loop, its old
// generation's growth between them, and how many of the slow requests (over SLOW_MS, default 10)
// were due within 100 ms before one finished. Session 9 found the tail in the HTTP thread's full
// GCs, session 10 in the writer's (docs/performance.md).
import { load, startGavel } from './lib/harness.ts';
import { authorizeRequest, preparePostgresProject, prepareProject } from './lib/fixtures.ts';
import { pacedLoad } from './lib/paced.ts';
import { eachLine, parseGcLine } from './lib/trace-gc.ts';
import { countFromEnv } from './lib/env-count.ts';

// Read before anything starts, so a bad value leaves no server behind.
const RATE = countFromEnv('RATE', 7000, { max: 1_000_000 });
const SECS = countFromEnv('SECS', 8);
const SLOW_MS = countFromEnv('SLOW_MS', 10);
const WARM_SECS = countFromEnv('WARM_SECS', 4);

const PG_URL = process.env.PG_URL;
const onPostgres = PG_URL ? await preparePostgresProject(PG_URL) : undefined;
const project = onPostgres?.project ?? await prepareProject();
process.env.GAVEL_BENCH_NODE_ARGS = `--trace-gc ${process.env.GAVEL_BENCH_NODE_ARGS ?? ''}`;
const gavel = await startGavel({ GAVEL_DATA_DIR: project.dataDir, GAVEL_DATABASE_URL: project.databaseUrl });
const gc: { at: number; isolate: string; kind: string; after: number }[] = [];
eachLine(gavel.child.stdout!, (line) => {
  const g = parseGcLine(line);
  if (g) gc.push({ at: performance.now(), isolate: g.isolate, kind: g.kind, after: g.after });
});

const opts = authorizeRequest(gavel.url, project);
await load({ ...opts, duration: 2 });
await load({ ...opts, duration: WARM_SECS, connections: 128 });

const start = performance.now();
const slow: number[] = [];
const result = await pacedLoad({ ...opts, rate: RATE, duration: SECS, connections: 128, onResponse: (due, latency) => { if (latency > SLOW_MS) slow.push(due); } });
const end = performance.now();
await gavel.stop();
await onPostgres?.drop();

// The HTTP thread's isolate scavenges most under this load; any other is SQLite's writer thread.
const during = gc.filter((g) => g.at >= start && g.at <= end);
const counts = new Map<string, number>();
for (const g of during) counts.set(g.isolate, (counts.get(g.isolate) ?? 0) + 1);
const isolates = [...counts].sort((a, b) => b[1] - a[1]).map(([isolate]) => isolate);
const near = (marks: typeof gc) => slow.filter((due) => marks.some((f) => f.at >= due && f.at - due <= 100)).length;

console.log(JSON.stringify(result));
console.log(`${slow.length} requests over ${SLOW_MS} ms during the ${SECS} s open loop at ${RATE}/s.`);
isolates.forEach((isolate, n) => {
  const ours = during.filter((g) => g.isolate === isolate);
  const fulls = ours.filter((g) => g.kind === 'Mark-Compact');
  // Old-generation growth: the heap left after each scavenge rises only by what was promoted.
  const scavenges = ours.filter((g) => g.kind === 'Scavenge');
  let grown = 0;
  for (let i = 1; i < scavenges.length; i++) grown += Math.max(0, scavenges[i]!.after - scavenges[i - 1]!.after);
  console.log(`${n === 0 ? 'HTTP thread' : "SQLite's writer thread"}: ${fulls.length} mark-compacts, ${scavenges.length} scavenges, ` +
    `old generation grew ~${(grown / SECS).toFixed(2)} MB/s between them; ${near(fulls)} of the slow requests were due within 100 ms before a mark-compact finished`);
});
