// Shared benchmark plumbing: start servers as child processes on loopback, load them with
// autocannon from this process, and print each figure beside its peer measured in the same run.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
 * Node flags of a Gavel server process: as `npm run serve` and the executable's shebang start it
 * (decisions 0005, 0006); for experiments, GAVEL_BENCH_NODE_ARGS adds flags (space-separated).
 */
export const gavelNodeArgs = (): string[] =>
  ['--max-semi-space-size=8', '--max-old-space-size=256', '--v8-pool-size=1', ...(process.env.GAVEL_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];

/** Starts `gavel serve` on an ephemeral port with a fresh data directory (SQLite unless env says otherwise). */
export function startGavel(env: NodeJS.ProcessEnv = {}): Promise<Started & { dataDir: string }> {
  const dataDir = env.GAVEL_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'gavel-bench-'));
  return startChild(new URL('../../src/cli/main.ts', import.meta.url).pathname,
    { GAVEL_PORT: '0', GAVEL_DATA_DIR: dataDir, GAVEL_LOG_LEVEL: 'warn', ...env }, ['serve'], /API:\s+http:\/\/[^:]+:(\d+)\/v1/,
    gavelNodeArgs())
    .then((s) => ({ ...s, dataDir }));
}

export interface Load { rps: number; p50: number; p99: number; errors: number; non2xx: number }

export async function load(opts: { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; connections?: number; duration?: number; overallRate?: number; requests?: autocannon.Request[] }): Promise<Load> {
  const r = await autocannon({
    url: opts.url, method: opts.method ?? 'GET', headers: opts.headers, body: opts.body,
    connections: opts.connections ?? 20, duration: opts.duration ?? Number(process.env.BENCH_SECONDS ?? 8),
    ...(opts.requests ? { requests: opts.requests } : {}),
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

export function table(rows: { name: string; load: Load; baseline?: Load }[]): void {
  const fmt = (n: number, d = 0) => n.toFixed(d).padStart(10);
  process.stdout.write(`${'workload'.padEnd(52)}${'req/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'non-2xx'.padStart(10)}${'vs base'.padStart(10)}\n`);
  for (const r of rows) {
    const ratio = r.baseline ? `${((r.load.rps / r.baseline.rps) * 100).toFixed(1)}%` : '';
    process.stdout.write(`${r.name.padEnd(52)}${fmt(r.load.rps)}${fmt(r.load.p50, 1)}${fmt(r.load.p99, 1)}${fmt(r.load.non2xx + r.load.errors)}${ratio.padStart(10)}\n`);
  }
}
