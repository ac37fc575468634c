// glibc's malloc keeps what a thread frees in that thread's arena, and hands it back to the system
// only from the arena's top. What V8's compilers, Node's sockets and SQLite free in the middle stays
// resident: after a minute at the maximum, 32 of 49 MB that malloc held were free, and one
// malloc_trim(0) took VmRSS from 213 to 186 MB (docs/performance.md, session 49). A serving process
// asks for that trim now and then, off its event loop (on libuv's pool, through koffi's FFI).
import { setInterval, clearInterval } from 'node:timers';

/**
 * How often a serving process trims. A trim under load took 30-68 ms here (a madvise per free run,
 * each arena locked while it is walked, so the HTTP thread's mallocs can wait on it): once a minute
 * it touches a few hundred of the 400k decisions a minute at half load, which a p99 does not see.
 */
export const TRIM_INTERVAL_MS = 60_000;

type AsyncTrim = { async(pad: number, done: (err: unknown, released: number) => void): void };

export interface MemoryTrim {
  /** Trims once; resolves true when glibc released memory, false when there was none to release. */
  now(): Promise<boolean>;
  stop(): void;
}

/** glibc's malloc_trim, or undefined where there is none (another libc, another system, no FFI). */
async function loadTrim(): Promise<AsyncTrim | undefined> {
  if (process.platform !== 'linux') return undefined;
  const report = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
  if (!report.header?.glibcVersionRuntime) return undefined; // musl has no malloc_trim
  const koffi = (await import('koffi')).default;
  return koffi.load('libc.so.6').func('int malloc_trim(size_t pad)') as unknown as AsyncTrim;
}

/**
 * Trims every `intervalMs` while the process runs (the timer keeps no process alive). On another
 * system or libc nothing is trimmed; where the FFI fails to load, `onUnavailable` is told why, once.
 */
export async function startMemoryTrim(options: { intervalMs?: number; onUnavailable?: (err: unknown) => void } = {}): Promise<MemoryTrim> {
  let trim: AsyncTrim | undefined;
  try { trim = await loadTrim(); } catch (err) { options.onUnavailable?.(err); }
  let running: Promise<boolean> | undefined;
  const now = (): Promise<boolean> => {
    if (!trim) return Promise.resolve(false);
    const t = trim;
    // One at a time: a trim still walking the arenas is not queued behind by another.
    running ??= new Promise<boolean>((resolve, reject) => t.async(0, (err, released) => (err ? reject(err) : resolve(released === 1))))
      .finally(() => { running = undefined; });
    return running;
  };
  const timer = trim ? setInterval(() => { now().catch(() => {}); }, options.intervalMs ?? TRIM_INTERVAL_MS) : undefined;
  timer?.unref();
  return { now, stop: () => clearInterval(timer) };
}
