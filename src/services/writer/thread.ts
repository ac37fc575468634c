// The SQLite writer thread, seen from the thread that answers HTTP. Calls made during one turn of
// the event loop leave as one message; outcomes come back the same way, as soon as their batch has
// committed without fsync. They settle only once an fdatasync of the WAL that began after their
// arrival has finished (WalSync, on libuv's pool): the flush's completion lands on this thread,
// where the answer leaves, and one flush covers every batch that arrived before it began.
// If the thread dies, what was pending fails (its transaction never committed, or committed and is
// reported lost: the caller answers 500 and the audit log still holds whatever committed), and the
// next call starts a new thread.
import { Worker } from 'node:worker_threads';
import type { Procedures, Writer } from './writer.ts';
import { decodeBatch, encodeBatch, fromWire, type CallMessage, type OutcomeMessage, type WireBatch } from './wire.ts';
import { WalSync } from '../../store/sqlite/wal-sync.ts';
import { PendingCalls } from './pending-calls.ts';

export interface ThreadWriterOptions {
  /** The SQLite database file the thread opens for writing. */
  file: string;
  /** Resolves once every commit made before the call is on disk; by default WalSync on the file's WAL. */
  durable?: () => Promise<void>;
  onError?: (err: unknown) => void;
  /** Procedures whose arguments and results are JSON values: their batches cross as JSON text. */
  json?: ReadonlySet<string>;
}

type Pending = { resolve: (v: unknown) => void; reject: (e: unknown) => void };

export function threadWriter<P extends Procedures>(options: ThreadWriterOptions): Writer<P> {
  let worker: Worker | undefined;
  let ready: Promise<void> | undefined;
  const pending = new PendingCalls<Pending>();
  let outbox: CallMessage[] = [];
  let flushScheduled = false;
  let closed = false;
  const wal = options.durable ? undefined : new WalSync(options.file);
  const durable = options.durable ?? (() => wal!.durable());
  const idle: (() => void)[] = [];
  const json = options.json ?? new Set<string>();

  const settle = (id: number, fn: (p: Pending) => void) => {
    const p = pending.take(id);
    if (!p) return;
    fn(p);
    if (pending.size === 0) {
      // Idle, the thread alone never keeps the process alive (the HTTP server does); busy, it must.
      worker?.unref();
      idle.splice(0).forEach((f) => f());
    }
  };

  function start(): Worker {
    const w = new Worker(new URL('./worker.ts', import.meta.url), {
      workerData: { file: options.file },
      // The thread holds statements and one batch at a time; a small young generation keeps the
      // process's resident memory near what a single thread would use.
      resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 256 },
    });
    w.on('message', (message: WireBatch<OutcomeMessage>) => {
      const batch = decodeBatch(message);
      // Committed, maybe not yet on disk: nothing is answered before the flush (invariant 1).
      durable().then(
        () => { for (const m of batch) settle(m.id, (p) => (m.ok ? p.resolve(m.value) : p.reject(fromWire(m.error)))); },
        (error: unknown) => { for (const m of batch) settle(m.id, (p) => p.reject(error)); },
      );
    });
    const lost = (err: unknown) => {
      if (worker !== w) return;
      worker = undefined;
      ready = undefined;
      options.onError?.(err);
      for (const id of pending.ids()) settle(id, (p) => p.reject(new Error('the writer thread stopped before answering', { cause: err })));
    };
    w.on('error', lost);
    w.on('exit', (code) => lost(new Error(`writer thread exited with code ${code}`)));
    ready = new Promise<void>((resolve, reject) => {
      w.once('online', resolve);
      w.once('error', reject);
    });
    ready.catch(() => {}); // a thread that fails to start is reported through `lost`
    return w;
  }

  function flush(): void {
    flushScheduled = false;
    const batch = outbox;
    outbox = [];
    if (batch.length === 0) return;
    worker ??= start();
    worker.ref();
    worker.postMessage(encodeBatch(batch, batch.every((c) => json.has(c.name))));
  }

  return {
    get pending() { return pending.size; },
    call(name, args) {
      if (closed) return Promise.reject(new Error('the writer is closed'));
      return new Promise((resolve, reject) => {
        const id = pending.add({ resolve: resolve as (v: unknown) => void, reject });
        outbox.push({ id, name, args });
        if (!flushScheduled) {
          flushScheduled = true;
          // Gather every call made in this turn (all requests parsed in one poll phase) into one message.
          setImmediate(flush);
        }
      });
    },
    async close() {
      closed = true;
      if (pending.size > 0) await new Promise<void>((resolve) => idle.push(resolve));
      await wal?.close();
      const w = worker;
      if (!w) return;
      worker = undefined;
      await ready?.catch(() => {});
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.ref();
      w.postMessage('close');
      await exited;
    },
  };
}
