// The SQLite writer thread, seen from the thread that answers HTTP. Calls made during one turn of
// the event loop leave as one message (one per 32 calls in a long turn); outcomes come back the
// same way, once their batch has committed and the writer thread has fdatasynced the WAL after
// that commit (worker.ts, decision 0022), so they settle on arrival (invariant 1). They arrive on a
// port of their own, counted in shared memory, so each new call first takes any that wait: in a long
// poll phase, finished decisions are answered before more requests are parsed (decision 0024). With an injected
// `durable` (tests), the thread makes no flush and outcomes settle once that resolves.
// If the thread dies, what was pending fails (its transaction never committed, or committed and is
// reported lost: the caller answers 500 and the audit log still holds whatever committed), and the
// next call starts a new thread.
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { setFlagsFromString, type HeapInfo } from 'node:v8';
import { clearingSpace, type Procedures, type Writer, type WriterSpace } from './writer.ts';
import { decodeBatch, encodeCalls, fromWire, type CallMessage, type OutcomeBatch, type OutcomeMessage } from './wire.ts';
import { textProcedures } from './procedures.ts';
import { PendingCalls } from './pending-calls.ts';

export interface ThreadWriterOptions {
  /** The SQLite database file the thread opens for writing. */
  file: string;
  /**
   * Tests: resolves once every commit made before the call is on disk. The writer thread then
   * makes no flush of its own; by default it flushes every batch before posting its outcomes.
   */
  durable?: () => Promise<void>;
  onError?: (err: unknown) => void;
  /** Procedures whose arguments and results are JSON values: their batches cross as JSON text. */
  json?: ReadonlySet<string>;
  /** Node options of the thread (default: the process's). Tests preload a probe of its flushes with `--import`. */
  execArgv?: string[];
  /** Cleared by a unit that commits while writes are failing for want of space (writer.ts). */
  space?: WriterSpace;
}

/**
 * Calls per message to the writer thread. Handing over a whole poll phase's calls at its end (128
 * at the benchmark's maximum) ran the two threads in turn, each idle while the other worked; a
 * message per 32 calls lets the writer commit while the rest are parsed (decision 0016).
 */
export const MAX_CALLS_PER_MESSAGE = 32;

/** The writer thread's young generation: V8 sizes it as three semi-spaces, so 24 MiB is 8 MiB semi-spaces. */
export const WRITER_YOUNG_GENERATION_MB = 24;

type Pending = { resolve: (v: unknown) => void; reject: (e: unknown) => void };

export function threadWriter<P extends Procedures>(options: ThreadWriterOptions): Writer<P> & { readonly syncs: number; readonly answers: number; readonly messages: number; readonly outcomesPosted: number; readonly outcomesTaken: number; heapStatistics(): Promise<HeapInfo> | undefined } {
  let worker: Worker | undefined;
  let ready: Promise<void> | undefined;
  /** The thread's outcomes arrive here; `posted` counts the messages it has queued (shared memory). */
  let outcomes: MessagePort | undefined;
  let posted = new Int32Array(new SharedArrayBuffer(4));
  let taken = 0;
  const pending = new PendingCalls<Pending>();
  let outbox: CallMessage[] = [];
  let flushScheduled = false;
  let closed = false;
  const durable = options.durable;
  /**
   * A flush of the writer thread failed: its pages may be lost, so nothing is acknowledged again,
   * not even by a restarted thread, whose own WalSyncNow would start afresh.
   */
  let flushFailed: unknown;
  const idle: (() => void)[] = [];
  const json = options.json ?? new Set<string>();
  let threadSyncs = 0;
  let answers = 0;
  let messages = 0;

  const settle = (id: number, fn: (p: Pending) => void) => {
    const p = pending.take(id);
    if (!p) return;
    fn(p);
    if (pending.size === 0) {
      // Idle, the thread alone never keeps the process alive (the HTTP server does); busy, it must.
      worker?.unref();
      outcomes?.unref();
      idle.splice(0).forEach((f) => f());
    }
  };
  const failAll = (ids: Iterable<number>, error: unknown) => { for (const id of ids) settle(id, (p) => p.reject(error)); };

  function start(): Worker {
    // The launch lines' --max-semi-space-size is a process-wide V8 flag, and a set flag overrides a
    // worker's resourceLimits. Cleared before the thread starts, the limits below are the writer's
    // own; the HTTP thread's heap was sized when it started and keeps its flag (decision 0005).
    setFlagsFromString('--max-semi-space-size=0');
    const channel = new MessageChannel();
    posted = new Int32Array(new SharedArrayBuffer(4));
    taken = 0;
    const w = new Worker(new URL('./worker.ts', import.meta.url), {
      // An injected `durable` (tests) decides every flush, so the thread then makes none itself.
      workerData: { file: options.file, syncHere: durable === undefined, outcomes: channel.port2, posted },
      transferList: [channel.port2],
      ...(options.execArgv ? { execArgv: options.execArgv } : {}),
      // 8 MiB semi-spaces, as decision 0005 meant: 14-17 MB less resident memory than 16 MiB, at
      // no measured cost since the writer promotes ~0.06 MB/s (decision 0005, session 49 addendum).
      resourceLimits: { maxYoungGenerationSizeMb: WRITER_YOUNG_GENERATION_MB, maxOldGenerationSizeMb: 256 },
    });
    const port = channel.port1;
    outcomes = port;
    port.on('message', (message: OutcomeBatch) => { taken++; onOutcomes(message); });
    const onOutcomes = (message: OutcomeBatch) => {
      answers++;
      const batch = decodeBatch(message.outcomes);
      const settleAll = () => { for (const m of batch) settle(m.id, (p) => (m.ok ? p.resolve(m.value) : p.reject(fromWire(m.error)))); };
      if (message.syncError) flushFailed ??= fromWire(message.syncError);
      if (flushFailed !== undefined) { failAll(batch.map((m) => m.id), flushFailed); return; }
      // On disk already: the writer thread flushed after their commit.
      if (message.synced) { threadSyncs++; settleAll(); return; }
      // Committed, not yet on disk: only with an injected flush, which decides (invariant 1).
      if (!durable) { failAll(batch.map((m) => m.id), new Error('the writer thread answered without flushing')); return; }
      durable().then(settleAll, (error: unknown) => failAll(batch.map((m) => m.id), error));
    };
    takeOutcomes = () => {
      // A message the thread has queued and counted, not yet delivered by the event loop: taken now.
      for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) { taken++; onOutcomes(m.message as OutcomeBatch); }
    };
    const lost = (err: unknown) => {
      if (worker !== w) return;
      worker = undefined;
      // What it posted before it stopped was committed and flushed: settled, not failed.
      takeOutcomes();
      port.close();
      outcomes = undefined;
      ready = undefined;
      options.onError?.(err);
      failAll(pending.ids(), new Error('the writer thread stopped before answering', { cause: err }));
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

  /** Settles outcomes the writer thread has already posted; set while a thread runs. */
  let takeOutcomes = () => {};

  function flush(): void {
    flushScheduled = false;
    post();
  }

  function post(): void {
    const batch = outbox;
    outbox = [];
    if (batch.length === 0) return;
    try {
      worker ??= start();
      worker.ref();
      outcomes?.ref();
      // The worker decodes with the same codecs (textProcedures): one list, so they cannot differ.
      worker.postMessage(encodeCalls(batch, json, textProcedures));
      messages++;
    } catch (error) {
      // Not sent (arguments that cannot be cloned, a thread that cannot start): every call of the
      // message fails now rather than wait for an answer that will never come.
      failAll(batch.map((c) => c.id), error);
    }
  }

  return {
    get pending() { return pending.size; },
    /** fdatasyncs of the WAL the writer thread made before posting outcomes. */
    get syncs() { return threadSyncs; },
    /** Messages of outcomes received from the thread. */
    get answers() { return answers; },
    /** Messages of calls posted to the thread. */
    get messages() { return messages; },
    /** Messages of outcomes the thread has posted, and how many of them this thread has taken. */
    get outcomesPosted() { return Atomics.load(posted, 0); },
    get outcomesTaken() { return taken; },
    /** The writer thread's V8 heap, if it runs. */
    heapStatistics: () => worker?.getHeapStatistics(),
    call(name, args) {
      if (closed) return Promise.reject(new Error('the writer is closed'));
      // Between requests of a long poll phase, outcomes the thread has posted are settled now rather
      // than when the loop reaches their message, so their answers leave before more requests are
      // parsed (a 4-byte read when none waits).
      if (Atomics.load(posted, 0) !== taken) takeOutcomes();
      const answer = new Promise<Awaited<ReturnType<P[typeof name]>>>((resolve, reject) => {
        const id = pending.add({ resolve: resolve as (v: unknown) => void, reject });
        outbox.push({ id, name, args });
        // A full message leaves now, so the writer commits it while this thread parses the rest of
        // a long poll phase (decision 0016).
        if (outbox.length >= MAX_CALLS_PER_MESSAGE) { post(); return; }
        if (!flushScheduled) {
          flushScheduled = true;
          // Gather every call made in this turn (all requests parsed in one poll phase) into one message.
          setImmediate(flush);
        }
      });
      // While writes fail for want of space, one that commits says there is space again.
      return clearingSpace(options.space, name, answer);
    },
    async close() {
      closed = true;
      if (pending.size > 0) await new Promise<void>((resolve) => idle.push(resolve));
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
