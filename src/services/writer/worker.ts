// Entry of the SQLite writer thread: owns a write connection to the database file and runs the
// procedures it is sent through the group committer, so concurrent units share one transaction.
// Outcomes are posted as soon as their transaction has committed (synchronous=NORMAL: written to
// the WAL, not yet synced); the calling thread makes them durable before settling (thread.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { openStore } from '../../store/store.ts';
import { atomicProcedures, jsonProcedures, procedures } from './procedures.ts';
import { writerBatches } from './batches.ts';
import type { AtomicProcedures, Procedure } from './writer.ts';
import { decodeBatch, encodeBatch, toWire, type CallMessage, type OutcomeMessage, type WireBatch } from './wire.ts';

const port = parentPort!;
const file = (workerData as { file: string }).file;
const store = openStore({ kind: 'sqlite', file, durability: 'caller', reader: false });
const batches = writerBatches(store);

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
  if (b.length > 0) port.postMessage(encodeBatch(b, json));
}

let inFlight = 0;
let closing = false;
async function closeWhenIdle(): Promise<void> {
  if (!closing || inFlight > 0) return;
  flushOutbox();
  await store.close();
  port.close();
}

port.on('message', (message: WireBatch<CallMessage> | 'close') => {
  if (message === 'close') { closing = true; void closeWhenIdle(); return; }
  for (const { id, name, args } of decodeBatch(message)) {
    const proc = procedures[name as keyof typeof procedures] as Procedure<unknown, unknown> | undefined;
    if (!proc) { reply({ id, ok: false, error: toWire(new Error(`unknown writer procedure ${name}`)) }, false); continue; }
    inFlight++;
    const atomic = atomicProcedures[name as keyof typeof atomicProcedures] as AtomicProcedures[string];
    batches.run((trx, env) => proc(trx, args, env), atomic && ((trx, env) => atomic(trx, args, env))).then(
      (value) => reply({ id, ok: true, value }, jsonProcedures.has(name)),
      (error: unknown) => reply({ id, ok: false, error: toWire(error) }, false),
    ).finally(() => { inFlight--; void closeWhenIdle(); });
  }
});
