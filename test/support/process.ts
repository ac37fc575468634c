// Real `gavel serve` processes, for tests that need more than one instance or a kill -9.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { StoreOptions } from '../../src/store/store.ts';

export const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

export interface GavelProcess { url: string; child: ChildProcess; kill(signal?: NodeJS.Signals): Promise<void>; /** Every stdout line so far (the log, at GAVEL_LOG_LEVEL). */ lines: string[] }

/** GAVEL_DATABASE_URL for a test store (PostgreSQL schema carried as a connection option). */
export function databaseUrl(options: StoreOptions): string | undefined {
  if (options.kind === 'sqlite') return undefined;
  const u = new URL(options.url);
  if (options.schema) u.searchParams.set('options', `-c search_path=${options.schema}`);
  return u.toString();
}

// Children never keep a test file's process alive (a failed test must not hang the run), and
// whatever is still running when the file's process exits is killed with it.
const children = new Set<ChildProcess>();
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });

/** `main`: another entry (the built one, test/build); `nodeArgs`: flags for its node; `prefix`: a command that runs node (`prlimit …`). */
export async function spawnGavel(env: Record<string, string | undefined>, { main = MAIN, nodeArgs = [] as string[], prefix = [] as string[] } = {}): Promise<GavelProcess> {
  const command = [...prefix, process.execPath, ...nodeArgs, main, 'serve'];
  const child = spawn(command[0]!, command.slice(1), {
    env: { ...process.env, GAVEL_PORT: '0', GAVEL_LOG_LEVEL: process.env.GAVEL_TEST_CHILD_LOG ?? 'error', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  // 'close', not 'exit': the child's output is read to its end, so `lines` holds its last lines
  // (a test that looks for a secret in them must see all of them).
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  child.unref();
  for (const stream of [child.stdout, child.stderr]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
  let stderr = '';
  child.stderr!.on('data', (d) => { stderr += d; if (process.env.GAVEL_TEST_CHILD_LOG) process.stderr.write(d); });
  const rl = createInterface({ input: child.stdout! });
  const lines: string[] = [];
  rl.on('line', (line) => lines.push(line));
  const url = await new Promise<string>((resolve, reject) => {
    // A start takes a second or two; on a machine loaded many times over (load 20 on 2 CPUs) it
    // took over 30 s. Only a start that will not come should fail here.
    const timer = setTimeout(() => reject(new Error(`gavel did not start: ${stderr}`)), 90_000);
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`gavel exited with ${code}: ${stderr}`)); });
    rl.on('line', (line) => {
      if (process.env.GAVEL_TEST_CHILD_LOG) process.stderr.write(line + '\n');
      const m = /API:\s+(http:\/\/[^\s]+)\/v1/.exec(line);
      if (m) { clearTimeout(timer); resolve(m[1]!); }
    });
  });
  return {
    url, child, lines,
    kill: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return closed;
    },
  };
}

/**
 * A project ready for `gavel serve` child processes: the 20-rule test policy active, one agent
 * with a read permit, one API key. The in-process service is closed so that children own the store.
 */
export async function prepareForChildren(backend: import('./backends.ts').Backend, overrides: Partial<import('../../src/config/config.ts').Config> = {}) {
  const { startService } = await import('./service.ts');
  const { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } = await import('./authorize.ts');
  const svc = await startService(backend, overrides);
  await activatePolicy(svc, ALLOW_PAYMENTS);
  const agent = newAgent();
  const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
  // A second permit with a budget: its decisions spend, so they take the transaction path.
  const budget = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 1_000_000_000, currency: 'EUR' } });
  const key = await svc.keyHeader([]);
  await svc.close();
  await svc.ts.store.close();
  return {
    svc, agent, jws, key, budget,
    env: { GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options), ...(overrides.merchantsFile ? { GAVEL_MERCHANTS_FILE: overrides.merchantsFile } : {}) },
  };
}
