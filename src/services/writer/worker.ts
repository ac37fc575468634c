// Entry of the SQLite writer thread: owns a write connection to the database file and runs the
// procedures it is sent through the group committer, so concurrent units share one transaction.
// Outcomes are posted as soon as their transaction has committed (synchronous=NORMAL: written to
// the WAL, not yet synced); the calling thread makes them durable before settling (thread.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { openStore } from '../../store/store.ts';
import { procedures } from './procedures.ts';
import { writerBatches } from './batches.ts';
import type { Procedure } from './writer.ts';
import { toWire, type CallMessage, type OutcomeMessage } from './wire.ts';

const port = parentPort!;
const file = (workerData as { file: string }).file;
const store = openStore({ kind: 'sqlite', file, durability: 'caller', reader: false });
const batches = writerBatches(store);

let outbox: OutcomeMessage[] = [];
let flushScheduled = false;
function reply(m: OutcomeMessage): void {
  outbox.push(m);
  if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(() => { flushScheduled = false; const b = outbox; outbox = []; port.postMessage(b); });
  }
}

let inFlight = 0;
let closing = false;
async function closeWhenIdle(): Promise<void> {
  if (!closing || inFlight > 0) return;
  if (outbox.length > 0) { port.postMessage(outbox); outbox = []; }
  await store.close();
  port.close();
}

port.on('message', (batch: CallMessage[] | 'close') => {
  if (batch === 'close') { closing = true; void closeWhenIdle(); return; }
  for (const { id, name, args } of batch) {
    const proc = procedures[name as keyof typeof procedures] as Procedure<unknown, unknown> | undefined;
    if (!proc) { reply({ id, ok: false, error: toWire(new Error(`unknown writer procedure ${name}`)) }); continue; }
    inFlight++;
    batches.run((trx, env) => proc(trx, args, env)).then(
      (value) => reply({ id, ok: true, value }),
      (error: unknown) => reply({ id, ok: false, error: toWire(error) }),
    ).finally(() => { inFlight--; void closeWhenIdle(); });
  }
});
