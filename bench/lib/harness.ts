// Shared benchmark plumbing: start servers as child processes on loopback, load them with
// autocannon from this process, and print each figure beside its peer measured in the same run.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { scratchDir } from './scratch-dir.ts';
import { countFromEnv } from './env-count.ts';
import autocannon from 'autocannon';

export interface Started { url: string; child: ChildProcess; stop(): Promise<void> }

/** Runs `node <script>` and waits for it to print one JSON line with `{port}` (or a matching line). */
export async function startChild(script: string, env: NodeJS.ProcessEnv = {}, args: string[] = [], match?: RegExp, nodeArgs: string[] = []): Promise<Started> {
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const rl = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    rl.on('line', (line) => {
      if (match) { const m = match.exec(line); if (m) resolve(Number(m[1])); return; }
      try { const j = JSON.parse(line); if (j.port) resolve(j.port); } catch { /* not ours */ }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`, child,
    stop: () => new Promise((resolve) => { child.once('exit', () => resolve()); child.kill('SIGTERM'); }),
  };
}

export const startBaseline = () => startChild(new URL('./baseline-server.ts', import.meta.url).pathname);

/**
 * Node flags of a Gavel server process: as `npm start` and `npm run serve` start it (decisions
 * 0005, 0006, 0018, 0023); for experiments, GAVEL_BENCH_NODE_ARGS adds flags (space-separated).
 */
export const gavelNodeArgs = (): string[] =>
  ['--max-semi-space-size=16', '--max-old-space-size=256', '--v8-pool-size=1', '--no-allocation-site-pretenuring', '--no-incremental-marking-task', ...(process.env.GAVEL_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];

const built = new Set<string>();
/**
 * The entry of the Gavel checkout at `dir` as `npm start` runs it: its built JavaScript (decision
 * 0021), built once per benchmark process; a checkout from before the build ran its TypeScript.
 */
export function gavelEntry(dir = new URL('../..', import.meta.url).pathname.replace(/\/$/, '')): string {
  if (!existsSync(`${dir}/scripts/build.ts`)) return `${dir}/src/cli/main.ts`;
  if (!built.has(dir)) {
    const b = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', `${dir}/scripts/build.ts`], { stdio: 'inherit' });
    if (b.status !== 0) throw new Error(`building ${dir} failed`);
    built.add(dir);
  }
  return `${dir}/dist/cli/main.js`;
}

/** Starts `gavel serve` on an ephemeral port with a fresh data directory (SQLite unless env says otherwise). */
export function startGavel(env: NodeJS.ProcessEnv = {}): Promise<Started & { dataDir: string }> {
  const dataDir = env.GAVEL_DATA_DIR ?? scratchDir('gavel-bench-');
  return startChild(gavelEntry(),
    { GAVEL_PORT: '0', GAVEL_DATA_DIR: dataDir, GAVEL_LOG_LEVEL: 'warn', ...env }, ['serve'], /API:\s+http:\/\/[^:]+:(\d+)\/v1/,
    gavelNodeArgs())
    .then((s) => ({ ...s, dataDir }));
}

/** Length of a closed-loop load window unless the caller sets one (BENCH_SECONDS). */
const LOAD_SECONDS = countFromEnv('BENCH_SECONDS', 8);

/**
 * CPU time per request during a load, in µs: the server's (every thread of `pid`, and by thread
 * name: MainThread answers HTTP, WorkerThread is the SQLite writer, V8Worker GC and compiler,
 * libuv-worker the pool) and the load generator's (this process). Unlike req/s, which moves
 * ±10–25% with this VM's speed, CPU per request compares peers and code across runs.
 */
export interface CpuPerRequest { server: number; client: number; threads: Record<string, number> }

export interface Load { rps: number; p50: number; p99: number; errors: number; non2xx: number; cpu?: CpuPerRequest }

/** Resident memory of a process in MB (VmRSS, from /proc); NaN once it has exited. */
export function residentMb(pid: number): number {
  let status: string;
  try { status = readFileSync(`/proc/${pid}/status`, 'utf8'); } catch { return NaN; }
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

/** CPU µs by thread name (threads sharing a name summed) of a process, from /proc. */
export function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tasks: string[];
  try { tasks = readdirSync(`/proc/${pid}/task`); } catch { return out; }
  const tick = 1e6 / 100; // USER_HZ is 100 on Linux
  for (const t of tasks) {
    let stat: string;
    try { stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8'); } catch { continue; }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) * tick);
  }
  return out;
}

function cpuPerRequest(pid: number, before: Map<string, number>, clientBefore: NodeJS.CpuUsage, requests: number): CpuPerRequest {
  const after = threadCpu(pid);
  const client = process.cpuUsage(clientBefore);
  const threads: Record<string, number> = {};
  let server = 0;
  for (const [name, us] of after) {
    const per = (us - (before.get(name) ?? 0)) / requests;
    server += per;
    if (per >= 1) threads[name] = Math.round(per);
  }
  return { server, client: (client.user + client.system) / requests, threads };
}

/** `serverPid`: also measure CPU per request (Load.cpu). */
export async function load(opts: { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; connections?: number; duration?: number; overallRate?: number; requests?: autocannon.Request[]; serverPid?: number | undefined }): Promise<Load> {
  const cpuBefore = opts.serverPid !== undefined ? threadCpu(opts.serverPid) : undefined;
  const clientBefore = process.cpuUsage();
  const r = await autocannon({
    url: opts.url, method: opts.method ?? 'GET', headers: opts.headers, body: opts.body,
    connections: opts.connections ?? 20, duration: opts.duration ?? LOAD_SECONDS,
    ...(opts.requests ? { requests: opts.requests } : {}),
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
  });
  const cpu = cpuBefore && r.requests.total > 0 ? cpuPerRequest(opts.serverPid!, cpuBefore, clientBefore, r.requests.total) : undefined;
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx, ...(cpu ? { cpu } : {}) };
}

export function table(rows: { name: string; load: Load; baseline?: Load }[]): void {
  const fmt = (n: number, d = 0) => n.toFixed(d).padStart(10);
  const withCpu = rows.some((r) => r.load.cpu);
  const cpuHead = withCpu ? `${'server µs'.padStart(11)}${'client µs'.padStart(11)}` : '';
  // At least 52 wide, so tables of earlier runs line up with these; wider for longer names.
  const width = Math.max(52, ...rows.map((r) => r.name.length + 1));
  process.stdout.write(`${'workload'.padEnd(width)}${'req/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'non-2xx'.padStart(10)}${'vs base'.padStart(10)}${cpuHead}\n`);
  for (const r of rows) {
    const ratio = r.baseline ? `${((r.load.rps / r.baseline.rps) * 100).toFixed(1)}%` : '';
    const cpu = withCpu ? (r.load.cpu ? `${r.load.cpu.server.toFixed(0).padStart(11)}${r.load.cpu.client.toFixed(0).padStart(11)}` : ''.padStart(22)) : '';
    process.stdout.write(`${r.name.padEnd(width)}${fmt(r.load.rps)}${fmt(r.load.p50, 1)}${fmt(r.load.p99, 1)}${fmt(r.load.non2xx + r.load.errors)}${ratio.padStart(10)}${cpu}\n`);
  }
  if (withCpu) process.stdout.write('server µs, client µs: CPU time per request of the server (all its threads) and of the load generator, during that load\n');
}
