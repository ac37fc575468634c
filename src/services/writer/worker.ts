// Entry of the SQLite writer thread: owns a write connection to the database file and runs the
// procedures it is sent through the group committer, so concurrent units share one transaction.
// Outcomes are posted as soon as their transaction has committed (synchronous=NORMAL: written to
// the WAL, not yet synced); the calling thread makes them durable before settling (thread.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { createCommitter } from '../../store/group-commit.ts';
import { openStore } from '../../store/store.ts';
import { procedures } from './procedures.ts';
import { sequenceWork } from '../auditlog/sequencer.ts';

/** Bounds one batch's sequencing work; a backlog beyond it waits for the next batch or tick. */
const SEQUENCE_PER_BATCH = 256;
import type { Procedure } from './writer.ts';
import { toWire, type CallMessage, type OutcomeMessage } from './wire.ts';

const port = parentPort!;
const file = (workerData as { file: string }).file;
const store = openStore({ kind: 'sqlite', file, durability: 'caller', reader: false });
const env = { dialect: store.dialect, raw: store.raw };
// Every batch ends by sequencing the audit events waiting (its own, and any the HTTP thread's
// transactions committed), in the same transaction: the log's work is spread evenly over the
// batches instead of arriving as separate slices, and shares their commit.
const committer = createCommitter(store, {
  afterUnits: async (trx) => { await sequenceWork(trx, env, SEQUENCE_PER_BATCH, new Date()); },
  onError: (error) => process.emitWarning(`sequencing inside a writer batch failed; the audit-log loop retries: ${String(error)}`),
});

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
    committer.run((trx) => proc(trx, args, env)).then(
      (value) => reply({ id, ok: true, value }),
      (error: unknown) => reply({ id, ok: false, error: toWire(error) }),
    ).finally(() => { inFlight--; void closeWhenIdle(); });
  }
});
