// Entry of the SQLite writer thread: owns a write connection to the database file and runs the
// procedures it is sent through the group committer, so concurrent units share one transaction.
// A batch commits with synchronous=NORMAL (written to the WAL, not yet synced); this thread then
// fdatasyncs the WAL itself and only then posts the batch's outcomes, so nothing is answered before
// it is on disk (invariant 1). Calls that arrive meanwhile gather in the port and make the next
// batch: at the maximum that doubles as group commit's gathering window, and each batch then
// spares the HTTP thread a flush through libuv's pool and its completion (decision 0022; before
// it, batches that found calls waiting were flushed there, decision 0015).
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { WalSyncNow } from '../../store/sqlite/wal-sync.ts';
import { openStore } from '../../store/store.ts';
import { atomicProcedures, checkKeepingProcedures, jsonProcedures, procedures, textProcedures } from './procedures.ts';
import { writerBatches } from './batches.ts';
import type { AtomicProcedures, Procedure } from './writer.ts';
import { decodeCalls, encodeBatch, toWire, type CallMessage, type OutcomeBatch, type OutcomeMessage, type WireBatch } from './wire.ts';

const port = parentPort!;
const { file, syncHere, outcomes, posted } = workerData as { file: string; syncHere: boolean; outcomes: MessagePort; posted: Int32Array };
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
  // An injected flush (tests, `durable`) is the caller's to make; otherwise every batch is flushed here.
  if (syncHere) {
    try {
      wal.sync();
      message.synced = true;
    } catch (error) {
      message.syncError = toWire(error);
    }
  }
  outcomes.postMessage(message);
  // Counted after the message is queued: the HTTP thread may take it between requests (thread.ts).
  Atomics.add(posted, 0, 1);
}

let inFlight = 0;
let closing = false;
async function closeWhenIdle(): Promise<void> {
  if (!closing || inFlight > 0) return;
  flushOutbox();
  await store.close();
  wal.close();
  outcomes.close();
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
