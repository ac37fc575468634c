// `gavel up`'s witness: `gavel witness` in a process of its own, with its own key and storage
// (<dataDir>/witness), as the audit-log issue and DESIGN.md require. In the log's process its key
// would sit in the memory of what it vouches for, and a cosignature would prove nothing independent.
// The child exits when this process does, however it ends (its IPC channel closes), so a restart
// after kill -9 finds the port free.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface LocalWitness {
  readonly url: string;
  readonly publicKeyVkey: string;
  close(): Promise<void>;
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
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let url: string | undefined;
    let vkey: string | undefined;
    const timer = setTimeout(() => { void close(); reject(new LocalWitnessFailed('the local witness did not start within 30 s')); }, START_TIMEOUT_MS);
    const failedToStart = (code: number | null) => {
      clearTimeout(timer);
      // Its own one line, with the flags it names turned into the settings that set them here.
      const said = stderr.trim().split('\n').find((l) => l.startsWith('gavel: ') || l.startsWith('gavel witness: '))
        ?.replace(/^gavel( witness)?: /, '').replace('(--port)', '(GAVEL_WITNESS_PORT)').replace('--data-dir', 'GAVEL_DATA_DIR');
      reject(new LocalWitnessFailed(`the local witness did not start: ${said ?? (stderr.trim().split('\n')[0] || `it exited with ${code}`)}`));
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
        resolve({ url, publicKeyVkey: vkey, close });
      }
    });
  });
}
