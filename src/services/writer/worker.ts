// Entry of the SQLite writer thread: owns a write connection to the database file and runs the
// procedures it is sent through the group committer, so concurrent units share one transaction.
// Outcomes are posted as soon as their transaction has committed (synchronous=NORMAL: written to
// the WAL, not yet synced), and nothing is answered before they are on disk (invariant 1):
// - if calls are already waiting, they start their batch at once and the calling thread makes the
//   outcomes durable meanwhile (WalSync on libuv's pool, thread.ts);
// - if none is, nothing would run here meanwhile, so this thread fdatasyncs the WAL itself before
//   posting them. At moderate load that spares each batch two thread wake-ups (the pool's and its
//   completion's): about a tenth of a decision's CPU at 4,000-5,000 decisions/s, measured.
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { WalSyncNow } from '../../store/sqlite/wal-sync.ts';
import { openStore } from '../../store/store.ts';
import { atomicProcedures, checkKeepingProcedures, jsonProcedures, procedures, textProcedures } from './procedures.ts';
import { writerBatches } from './batches.ts';
import type { AtomicProcedures, Procedure } from './writer.ts';
import { decodeCalls, encodeBatch, toWire, type CallMessage, type OutcomeBatch, type OutcomeMessage, type WireBatch } from './wire.ts';

const port = parentPort!;
const { file, syncHere } = workerData as { file: string; syncHere: boolean };
const store = openStore({ kind: 'sqlite', file, durability: 'caller', reader: false });
const batches = writerBatches(store);
const wal = new WalSyncNow(file);

let outbox: OutcomeMessage[] = [];
let flushScheduled = false;
/** Whether everything in the outbox is plain JSON (successful outcomes of JSON procedures). */
let outboxJson = true;
function reply(m: OutcomeMessage, json: boolean): void {
  outbox.push(m);
  outboxJson &&= json;
  if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(flushOutbox);
  }
}
function flushOutbox(): void {
  flushScheduled = false;
  const b = outbox;
  const json = outboxJson;
  outbox = [];
  outboxJson = true;
  if (b.length === 0) return;
  const message: OutcomeBatch = { outcomes: encodeBatch(b, json), synced: false };
  // Flush here only if no call is waiting: no unit accepted and unanswered (a batch queued), and no
  // message arrived since this turn's poll (taken now, it starts its batch instead).
  if (syncHere && inFlight === 0 && !takeWaitingMessage()) {
    try {
      wal.sync();
      message.synced = true;
    } catch (error) {
      message.syncError = toWire(error);
    }
  }
  port.postMessage(message);
}

let inFlight = 0;
let closing = false;
function takeWaitingMessage(): boolean {
  const waiting = receiveMessageOnPort(port);
  if (waiting) onMessage(waiting.message as WireBatch<CallMessage> | 'close');
  return waiting !== undefined;
}
async function closeWhenIdle(): Promise<void> {
  if (!closing || inFlight > 0) return;
  flushOutbox();
  await store.close();
  wal.close();
  port.close();
}

port.on('message', onMessage);
function onMessage(message: WireBatch<CallMessage> | 'close'): void {
  if (message === 'close') { closing = true; void closeWhenIdle(); return; }
  for (const { id, name, args } of decodeCalls(message, textProcedures)) {
    const proc = procedures[name as keyof typeof procedures] as Procedure<unknown, unknown> | undefined;
    if (!proc) { reply({ id, ok: false, error: toWire(new Error(`unknown writer procedure ${name}`)) }, false); continue; }
    inFlight++;
    const atomic = atomicProcedures[name as keyof typeof atomicProcedures] as AtomicProcedures[string];
    const done = () => { inFlight--; void closeWhenIdle(); };
    batches.run((trx, env) => proc(trx, args, env), atomic && ((trx, env) => atomic(trx, args, env)), checkKeepingProcedures.has(name)).then(
      (value) => { try { reply({ id, ok: true, value }, jsonProcedures.has(name)); } finally { done(); } },
      (error: unknown) => { try { reply({ id, ok: false, error: toWire(error) }, false); } finally { done(); } },
    );
  }
}
