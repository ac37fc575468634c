// `gavel up`'s witness: `gavel witness` in a process of its own, with its own key and storage
// (<dataDir>/witness), as the audit-log issue and DESIGN.md require. In the log's process its key
// would sit in the memory of what it vouches for, and a cosignature would prove nothing independent.
// The child exits when this process does, however it ends (its IPC channel closes), so a restart
// after kill -9 finds the port free. A child that dies while this process runs is started again on
// the same port, key and storage (`superviseLocalWitness`): without it every later checkpoint went
// unwitnessed, and every proof not ready, until someone restarted `gavel up`.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { FOREIGN_WITNESS_REMEDY } from '../witness/store.ts';

export interface LocalWitness {
  readonly url: string;
  readonly publicKeyVkey: string;
  close(): Promise<void>;
  /** Settles when the child exits, however it exits (after `close()` too). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The witness could not start (its port taken, its key damaged): its own one-line reason. */
export class LocalWitnessFailed extends Error {}

const START_TIMEOUT_MS = 30_000;

export function spawnLocalWitness(opts: { dataDir: string; port: number; origin: string; vkey: string }): Promise<LocalWitness> {
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, 'witness',
    '--data-dir', opts.dataDir, '--port', String(opts.port), '--log', `${opts.origin}=${opts.vkey}`], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  // Until it listens its stderr is kept for the one line a failed start says; then passed on.
  let stderr = '';
  let started = false;
  child.stderr!.on('data', (d: Buffer) => { if (started) process.stderr.write(d); else stderr += d; });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const close = async () => {
    // Its signals it ignores (witness/main.ts): closing the channel is what stops it; a kill, if
    // the channel is already gone.
    if (child.connected) child.disconnect();
    else if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let url: string | undefined;
    let vkey: string | undefined;
    const timer = setTimeout(() => { void close(); reject(new LocalWitnessFailed('the local witness did not start within 30 s')); }, START_TIMEOUT_MS);
    const failedToStart = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      // Its own one line, with the flags it names turned into the settings that set them here.
      const said = stderr.trim().split('\n').find((l) => l.startsWith('gavel: ') || l.startsWith('gavel witness: '))
        ?.replace(/^gavel( witness)?: /, '').replace('(--port)', '(GAVEL_WITNESS_PORT)')
        // Here --data-dir is GAVEL_DATA_DIR/witness: pointing GAVEL_DATA_DIR elsewhere would leave the service's database behind.
        .replace(FOREIGN_WITNESS_REMEDY, "Move this file aside: gavel up's witness keeps its own in GAVEL_DATA_DIR/witness and makes it afresh at the next start")
        .replace('--data-dir', 'GAVEL_DATA_DIR');
      // A signal says more than whatever it wrote before it (a warning, say): it did not end on its own.
      reject(new LocalWitnessFailed(`the local witness did not start: ${said ?? (signal ? `it ${howItEnded(code, signal)}` : stderr.trim().split('\n')[0] || `it ${howItEnded(code, signal)}`)}`));
    };
    child.once('exit', failedToStart);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      url ??= /^witness listening on (\S+)$/.exec(line)?.[1];
      vkey ??= /^witness vkey (\S+)$/.exec(line)?.[1];
      if (url !== undefined && vkey !== undefined) {
        clearTimeout(timer);
        started = true;
        // Only this listener: close() awaits `exited`, and a start that fails later (its port
        // taken, a merchants file missing) closes the witness before it says why.
        child.removeListener('exit', failedToStart);
        resolve({ url, publicKeyVkey: vkey, close, exited });
      }
    });
  });
}

/** Signals with which Node ends a process that crashed (V8 out of memory aborts). */
const CRASH_SIGNALS = new Set(['SIGABRT', 'SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGFPE']);

/**
 * How a witness process ended, said so an operator can act on it. It ignores SIGINT, SIGTERM and
 * SIGHUP (witness/main.ts: it stops when gavel up does), so a signal that ends it came from
 * elsewhere: SIGKILL from a kill -9 or the kernel's out-of-memory killer, which logs each kill.
 */
export function howItEnded(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal === 'SIGKILL') return 'was killed by SIGKILL (a kill -9, or the kernel\'s out-of-memory killer: `dmesg` or `journalctl -k` lists its kills; if memory is short, give the host more)';
  if (signal && CRASH_SIGNALS.has(signal)) return `crashed (${signal})`;
  if (signal) return `was killed by ${signal}, sent by another process`;
  return `exited with code ${code}`;
}

/** The first wait before starting a dead witness again, and the longest (doubling between them). */
export const RESTART_FIRST_MS = 500;
const RESTART_MAX_MS = 30_000;

/**
 * `spawnLocalWitness`, started again whenever its child exits before `close()`: on the port it
 * listened on (GAVEL_WITNESS_PORT may be 0), so the URL the log submits to stays right, with the
 * same key and storage. A start that fails (the port taken meanwhile) is tried again, waiting twice
 * as long each time up to 30 s. `say` reports each exit and restart (the service's log, once it runs).
 */
export async function superviseLocalWitness(opts: { dataDir: string; port: number; origin: string; vkey: string }, say: { warn(msg: string): void; error(msg: string): void }): Promise<LocalWitness> {
  let current = await spawnLocalWitness(opts);
  const { url, publicKeyVkey } = current;
  const port = Number(new URL(url).port);
  let closing = false;
  let timer: NodeJS.Timeout | undefined;
  const watch = (w: LocalWitness) => {
    void w.exited.then(({ code, signal }) => {
      if (closing) return;
      say.error(`the local witness ${howItEnded(code, signal)}; starting it again on ${url}, with the same key and storage`);
      restart(RESTART_FIRST_MS);
    });
  };
  const restart = (waitMs: number) => {
    timer = setTimeout(() => {
      spawnLocalWitness({ ...opts, port }).then((w) => {
        if (closing) { void w.close(); return; }
        current = w;
        say.warn(`the local witness is running again on ${url}`);
        watch(w);
      }, (e: unknown) => {
        if (closing) return;
        const next = Math.min(waitMs * 2, RESTART_MAX_MS);
        say.error(`the local witness could not be started again (${(e as Error).message}); trying again in ${next / 1000} s`);
        restart(next);
      });
    }, waitMs);
    timer.unref();
  };
  watch(current);
  return {
    url, publicKeyVkey,
    get exited() { return current.exited; },
    async close() { closing = true; clearTimeout(timer); await current.close(); },
  };
}
