// Ad-hoc (not part of the bench suite): what the slow requests of an open loop coincide with.
// Runs the built `gavel serve` on SQLite, loads it at the maximum for WARM_SECS (default 20) s, then
// at RATE decisions/s (default: half of the rate that warm-up reached, as bench:authorize does) for
// SECS (default 24) s. Requests slower than SLOW_MS (default
// 8) are grouped into episodes, slow requests due less than 20 ms apart. Each episode is printed
// beside whatever happened from 30 ms before it to its end:
// - the mark-compacts of either isolate, and scavenges over 2 ms (--trace-gc);
// - the HTTP thread's event loop running over 4 ms late (a 2 ms interval, preloaded);
// - the server's flushes over 3 ms (fdatasync or fsync, from `perf trace` when it can attach): of
//   the WAL (the writer's commits) or of the database file (the end of a checkpoint);
// - the disk's own flushes over 4 ms (bench/lib/disk-probe.ts);
// - the machine's stalls over 3 ms on an otherwise idle thread (bench/lib/hiccup-probe.ts).
// Session 15 (docs/performance.md) used it to see what the half-max tail is made of on a VM.
import { spawn } from 'node:child_process';
import { fdatasyncSync, openSync, readFileSync, readlinkSync, readdirSync, rmSync, writeSync, closeSync } from 'node:fs';
import { load, startGavel } from './lib/harness.ts';
import { authorizeRequest, prepareProject } from './lib/fixtures.ts';
import { pacedLoad } from './lib/paced.ts';
import { startDiskProbe } from './lib/disk-probe.ts';
import { startHiccupProbe } from './lib/hiccup-probe.ts';
import { eachLine, parseGcLine } from './lib/trace-gc.ts';
import { countFromEnv } from './lib/env-count.ts';

// Read before anything starts, so a bad value leaves no server behind.
const SECS = countFromEnv('SECS', 24);
const SLOW_MS = countFromEnv('SLOW_MS', 8);
const WARM_SECS = countFromEnv('WARM_SECS', 20);
/** The open loop's rate; 0 (unset): half of what the warm-up reached. */
const FIXED_RATE = countFromEnv('RATE', 0, { min: 1, max: 1_000_000 });
const TOP = countFromEnv('TOP', 20);
const epoch = () => performance.timeOrigin + performance.now();

type Event = { at: number; kind: string; text: string };
const events: Event[] = [];

// The HTTP thread's loop lateness, written to the server's stdout only when late.
const lagProbe = `import { isMainThread } from 'node:worker_threads';
if (isMainThread) { let last = performance.now();
  setInterval(() => { const now = performance.now(); const late = now - last - 2;
    if (late > 4) process.stdout.write('loop-lag ' + (performance.timeOrigin + last + 2) + ' ' + late + '\\n'); last = now; }, 2).unref(); }`;
const project = await prepareProject();
process.env.GAVEL_BENCH_NODE_ARGS = `--trace-gc --import=data:text/javascript,${encodeURIComponent(lagProbe)} ${process.env.GAVEL_BENCH_NODE_ARGS ?? ''}`;
const gavel = await startGavel({ GAVEL_DATA_DIR: project.dataDir });
const pid = gavel.child.pid!;

let mainIsolate = '';
eachLine(gavel.child.stdout!, (line) => {
  const lag = /^loop-lag ([\d.]+) ([\d.]+)/.exec(line);
  if (lag) { events.push({ at: Number(lag[1]), kind: 'loop lag', text: `loop lag ${Number(lag[2]).toFixed(1)}` }); return; }
  const gc = parseGcLine(line);
  if (!gc) return;
  // The HTTP thread's isolate is the one holding more than 30 MB: the writer's holds about 15.
  if (!mainIsolate && gc.before > 30) mainIsolate = gc.isolate;
  const thread = gc.isolate === mainIsolate ? 'HTTP' : 'writer';
  // The line is written as the pause ends.
  if (gc.kind === 'Mark-Compact' || gc.pause > 2) events.push({ at: epoch() - gc.pause, kind: `${thread} ${gc.kind}`, text: `${thread} ${gc.kind === 'Mark-Compact' ? 'mark-compact' : 'scavenge'} ${gc.pause.toFixed(1)}` });
});

// The server's flushes, by file. perf's timestamps are aligned to ours by flushes of our own.
const fdNames = () => new Map(readdirSync(`/proc/${pid}/fd`).map((fd) => { try { return [fd, readlinkSync(`/proc/${pid}/fd/${fd}`)] as const; } catch { return [fd, ''] as const; } }));
const traceFile = `${project.dataDir}/perf-trace.txt`;
const perf = spawn('perf', ['trace', '-T', '-e', 'fdatasync,fsync', '-p', `${pid},${process.pid}`, '-o', traceFile], { stdio: 'ignore' });
let perfFailed = false;
perf.once('error', () => { perfFailed = true; });
await new Promise((r) => setTimeout(r, 1500));
const calibrationFile = `${project.dataDir}/calibration.bin`;
const calibrationFd = openSync(calibrationFile, 'w');
const calibration: number[] = [];
for (let i = 0; i < 5; i++) { writeSync(calibrationFd, Buffer.alloc(512)); calibration.push(epoch()); fdatasyncSync(calibrationFd); }
closeSync(calibrationFd);

const opts = authorizeRequest(gavel.url, project);
const max = await load({ ...opts, duration: WARM_SECS, connections: 128 });
const RATE = FIXED_RATE || Math.round(max.rps / 2);
const disk = startDiskProbe(project.dataDir);
const hiccups = startHiccupProbe();
const requests: { due: number; ms: number }[] = [];
const start = epoch();
const offset = performance.timeOrigin; // pacedLoad's due times are performance.now()
const result = await pacedLoad({ ...opts, rate: RATE, duration: SECS, connections: 128, onResponse: (due, ms) => requests.push({ due: due + offset, ms }) });
const end = epoch();
const files = fdNames();
const serverThreads = new Set(readdirSync(`/proc/${pid}/task`));
for (const s of (await disk.stop()).slow) events.push({ at: s.at, kind: 'disk probe', text: `disk probe flush ${s.ms.toFixed(1)}` });
for (const h of await hiccups.stop()) events.push({ at: h.at, kind: 'machine stall', text: `machine stall ${h.ms.toFixed(1)}` });
perf.kill('SIGINT');
await new Promise((r) => setTimeout(r, 1500));
await gavel.stop();

if (perfFailed) console.log('perf trace could not run: the server\'s own flushes are not shown');
else {
  // `<ms> ( <dur> ms): <thread>/<tid> <syscall>(fd: <n>...`
  const lines = readFileSync(traceFile, 'utf8').split('\n');
  const parsed = lines.map((l) => /^\s*([\d.]+) \(\s*([\d.]+) ms\): (\S+)\/(\d+) (fdatasync|fsync)\(fd: (\d+)/.exec(l)).filter((m) => m !== null);
  const mine = parsed.filter((m) => Number(m[4]) === process.pid).slice(0, calibration.length);
  const shift = mine.length ? calibration.slice(0, mine.length).reduce((t, c, i) => t + c - Number(mine[i]![1]), 0) / mine.length : 0;
  for (const m of parsed) {
    if (!serverThreads.has(m[4]!)) continue;
    const name = files.get(m[6]!) ?? '';
    if (!name.startsWith(project.dataDir)) continue;
    const ms = Number(m[2]);
    if (ms <= 3) continue;
    const what = name.endsWith('-wal') ? 'WAL flush' : 'checkpoint flush';
    events.push({ at: Number(m[1]) + shift, kind: what, text: `${what} ${ms.toFixed(1)} (${m[3]})` });
  }
}
rmSync(traceFile, { force: true });
rmSync(calibrationFile, { force: true });

requests.sort((a, b) => a.due - b.due);
const slow = requests.filter((r) => r.ms > SLOW_MS);
const episodes: { start: number; last: number; n: number; max: number }[] = [];
for (const r of slow) {
  const e = episodes.at(-1);
  if (e && r.due - e.last < 20) { e.last = r.due; e.n++; e.max = Math.max(e.max, r.ms); } else episodes.push({ start: r.due, last: r.due, n: 1, max: r.ms });
}
const near = (e: (typeof episodes)[number]) => events.filter((v) => v.at >= e.start - 30 && v.at <= e.last + e.max);

console.log(`maximum ${max.rps.toFixed(0)}/s; open loop at ${RATE}/s for ${SECS} s: p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms; ` +
  `${slow.length} requests over ${SLOW_MS} ms (${((100 * slow.length) / requests.length).toFixed(2)}%), in ${episodes.length} episodes`);
const early = slow.filter((r) => r.due - start < 1000).length;
console.log(`in the loop's first second: ${early} of the slow requests; without it, p99 would be ${(() => { const rest = requests.filter((r) => r.due - start >= 1000).map((r) => r.ms).sort((a, b) => a - b); return rest[Math.floor(rest.length * 0.99)]!.toFixed(1); })()} ms`);
console.log('largest episodes (offset into the loop, length, requests, slowest; what happened from 30 ms before):');
for (const e of [...episodes].sort((a, b) => b.n - a.n).slice(0, TOP)) {
  const what = near(e).map((v) => `${v.text} @${(v.at - e.start).toFixed(0)}`).join(', ') || 'nothing recorded';
  console.log(`  ${((e.start - start) / 1000).toFixed(2)} s, ${(e.last - e.start).toFixed(0)} ms, ${e.n} requests, ${e.max.toFixed(0)} ms: ${what}`);
}
const kinds = [...new Set(events.map((v) => v.kind))].sort();
const during = events.filter((v) => v.at >= start && v.at <= end);
console.log(`events during the loop: ${kinds.map((k) => `${k} ${during.filter((v) => v.kind === k).length}`).join(', ')}`);
console.log(`slow requests in an episode beside: ${kinds.map((k) => `${k} ${episodes.filter((e) => near(e).some((v) => v.kind === k)).reduce((t, e) => t + e.n, 0)}`).join(', ')}; ` +
  `beside nothing recorded ${episodes.filter((e) => near(e).length === 0).reduce((t, e) => t + e.n, 0)}`);
