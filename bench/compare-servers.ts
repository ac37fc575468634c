// Ad-hoc (not part of the bench suite): A/B two Gavel servers that differ in node flags or in code
// (another checkout), at the maximum (128 connections unless CONNS says otherwise). Each window
// starts a fresh server on a fresh project, warms it, measures, and stops it; the order alternates
// every round. Prints the median decisions/s, server CPU per decision (all threads, the HTTP and
// the writer thread), resident memory after each window, and the median of the per-round B/A ratios. Fresh servers per window,
// because two long-lived servers side by side were not comparable on these VMs: in two runs of
// three, whichever started first served 30% less at the same code (session 12,
// docs/performance.md).
//   ARGS_A, ARGS_B: extra node flags; ENV_A, ENV_B: environment (K=V, space-separated);
//   DIR_A, DIR_B: checkouts (default: this one);
//   ROUNDS (default 6), WIN (seconds measured per window, default 3), CONNS (default 128);
//   RATE: measure each window as an open loop at this many decisions/s instead (after the same
//   warm-up at the maximum), printing p99 too: CPU per decision at moderate load, where the half-max
//   tail is made (session 50).
import { pacedLoadFresh } from './lib/paced.ts';
import { load, residentMb, startChild, gavelEntry, gavelNodeArgs, threadCpu } from './lib/harness.ts';
import type * as Fixtures from './lib/fixtures.ts';
import { countFromEnv } from './lib/env-count.ts';

const here = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
const envOf = (spec = '') => Object.fromEntries(spec.split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const variants = {
  A: { dir: process.env.DIR_A ?? here, args: process.env.ARGS_A ?? '', env: envOf(process.env.ENV_A) },
  B: { dir: process.env.DIR_B ?? here, args: process.env.ARGS_B ?? '', env: envOf(process.env.ENV_B) },
};
type Window = { rps: number; p99: number; cpu: number; main: number; writer: number; rss: number };
const results: Record<'A' | 'B', Window[]> = { A: [], B: [] };
const rounds = countFromEnv('ROUNDS', 6);
const win = countFromEnv('WIN', 3);
const connections = countFromEnv('CONNS', 128, { max: 10_000 });
const rate = countFromEnv('RATE', 0, { max: 1_000_000 });

async function measure(v: { dir: string; args: string; env: Record<string, string> }): Promise<Window> {
  // The variant's own code prepares its project: a checkout may store things another cannot read
  // (its migrations, decision 0603), and an older server refuses a newer database.
  const { prepareProject, authorizeRequest } = await import(`${v.dir}/bench/lib/fixtures.ts`) as typeof Fixtures;
  const project = await prepareProject();
  const server = await startChild(gavelEntry(v.dir), { GAVEL_PORT: '0', GAVEL_DATA_DIR: project.dataDir, GAVEL_LOG_LEVEL: 'warn', ...v.env },
    ['serve'], /API:\s+http:\/\/[^:]+:(\d+)\/v1/, [...gavelNodeArgs(), ...v.args.split(' ').filter(Boolean)]);
  try {
    const opts = authorizeRequest(server.url, project);
    await load({ ...opts, duration: 1.5, connections });
    const pid = server.child.pid!;
    const before = threadCpu(pid);
    const r = rate > 0 ? await pacedLoadFresh({ ...opts, rate, duration: win, connections }) : await load({ ...opts, duration: win, connections });
    const after = threadCpu(pid);
    const n = r.rps * win;
    const of = (thread: string) => ((after.get(thread) ?? 0) - (before.get(thread) ?? 0)) / n;
    const cpu = [...after].reduce((t, [k, x]) => t + x - (before.get(k) ?? 0), 0) / n;
    return { rps: r.rps, p99: r.p99, cpu, main: of('MainThread'), writer: of('WorkerThread'), rss: residentMb(pid) };
  } finally { await server.stop(); }
}

for (let i = 0; i < rounds; i++) {
  for (const name of (i % 2 ? ['B', 'A'] : ['A', 'B']) as ('A' | 'B')[]) results[name].push(await measure(variants[name]));
}
const median = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]!; };
for (const name of ['A', 'B'] as const) {
  const w = results[name];
  const p99s = rate > 0 ? ` (open loop at ${rate}/s), p99 ${median(w.map((x) => x.p99)).toFixed(1)} ms (windows ${w.map((x) => x.p99.toFixed(1)).join(' ')})` : '';
  console.log(`${name} (${variants[name].dir} ${variants[name].args} ${process.env[`ENV_${name}`] ?? ''}): ${median(w.map((x) => x.rps)).toFixed(0)} decisions/s${p99s}, server CPU ${median(w.map((x) => x.cpu)).toFixed(1)} µs per decision (HTTP thread ${median(w.map((x) => x.main)).toFixed(1)}, writer ${median(w.map((x) => x.writer)).toFixed(1)}), resident memory after the window ${median(w.map((x) => x.rss)).toFixed(0)} MB; windows: ${w.map((x) => x.rps.toFixed(0)).join(' ')}`);
}
const ratios = results.A.map((a, i) => results.B[i]!.rps / a.rps);
console.log(`B/A: median of the rounds' ratios ${median(ratios).toFixed(3)} (${ratios.map((r) => r.toFixed(2)).join(' ')})`);
