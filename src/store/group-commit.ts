// Group commit: on SQLite, concurrent units of work share one transaction and one fsync instead
// of paying one fsync each: no unit's promise settles before the commit that holds it has returned
// (durable on a synchronous=FULL connection; the writer thread's NORMAL connection is made durable
// by its caller before anything is answered, services/writer/thread.ts). Each unit runs in its own
// savepoint, so one unit's failure rolls back only that unit. On PostgreSQL each unit has its own
// transaction on its own pooled connection (the server groups WAL flushes of concurrent commits
// itself), and a unit that loses a deadlock or serialization conflict is retried, never failed.
// A unit may carry a one-statement form (Atomic), tried first: on SQLite it runs in the batch with
// no savepoint (one statement is atomic), on PostgreSQL in autocommit.
// (Batching on PostgreSQL too was tried; under the execution benchmark batches stalled idle in
// transaction, so it stays per-unit until that is understood: docs/decisions/0003.)
import { sql } from 'kysely';
import type { Db, Store, Tx } from './store.ts';

type Unit = { work: (trx: Tx) => Promise<unknown>; atomic: Atomic<unknown> | undefined; resolve: (v: unknown) => void; reject: (e: unknown) => void; attempts: number };

/**
 * A unit's one-statement form, tried before its work: it writes everything the work would, or
 * nothing and returns undefined (then the work runs). SQLite runs it inside the batch's transaction
 * without a savepoint (one statement is atomic); PostgreSQL outside any transaction (autocommit).
 */
// On SQLite it may answer synchronously: a batch then runs it without a turn of the microtask queue.
export type Atomic<T> = (db: Db | Tx) => T | undefined | Promise<T | undefined>;
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown; retry: boolean };

export interface Committer {
  run<T>(work: (trx: Tx) => Promise<T>, atomic?: Atomic<T>): Promise<T>;
  /** Transactions committed so far (one per batch). */
  readonly commits: number;
}

const MAX_ATTEMPTS = 5;
/** PostgreSQL's deadlock_detected and serialization_failure: the work is sound, the timing was not. */
const isRetryable = (error: unknown) => ['40P01', '40001'].includes((error as { code?: string } | null)?.code ?? '');

export interface CommitterOptions {
  maxBatch?: number;
  /** SQLite: runs first in every batch's transaction (the write lock is held); a failure fails the batch. */
  beforeUnits?: (trx: Tx) => void | Promise<void>;
  /** SQLite: runs after the units, before afterUnits; a failure fails the whole batch. */
  finishUnits?: (trx: Tx) => void | Promise<void>;
  /**
   * SQLite: work every batch ends with, inside its transaction and its own savepoint (the writer
   * thread sequences the batch's audit events here). If it fails, only it is rolled back, the
   * batch still commits, and `onError` hears of it.
   */
  afterUnits?: (trx: Tx) => Promise<void>;
  /** SQLite: asked after finishUnits; false skips afterUnits and its savepoint for this batch. */
  wantsAfterUnits?: () => boolean;
  onError?: (error: unknown) => void;
}

export function createCommitter(store: Store, options: CommitterOptions = {}): Committer {
  if (store.dialect === 'postgres') return perUnit(store);
  const maxBatch = options.maxBatch ?? 256;
  const parallel = 1;
  let queue: Unit[] = [];
  let workers = 0;
  let scheduled = false;
  let commits = 0;
  // Straight on the connection the transaction holds (two statements per unit add up).
  const raw = store.raw;
  const savepoint = async (trx: Tx, statement: string) => {
    if (raw) raw.prepare(statement).run();
    else await sql.raw(statement).execute(trx);
  };

  async function runBatch(): Promise<void> {
    let batch: Unit[] = [];
    const outcomes: Outcome[] = [];
    try {
      await store.transaction(async (trx) => {
        // Take the batch only once the connection is ours: every unit that queued while we
        // waited for it (behind other requests' reads) joins this commit.
        batch = queue.splice(0, maxBatch);
        await options.beforeUnits?.(trx);
        for (const unit of batch) {
          // A failure of the one statement fails the batch (its transaction rolls back): it is
          // not expected, and no savepoint would undo what it may have written.
          const answer = unit.atomic?.(trx);
          const value = answer instanceof Promise ? await answer : answer;
          if (value !== undefined) { outcomes.push({ ok: true, value }); continue; }
          await savepoint(trx, 'savepoint unit');
          try {
            const value = await unit.work(trx);
            await savepoint(trx, 'release savepoint unit');
            outcomes.push({ ok: true, value });
          } catch (error) {
            // SQLite ended the transaction itself (a full disk, an I/O error): no savepoint is left
            // to roll back to, and the batch fails with the error that says why, not "no such savepoint".
            if (raw && !raw.inTransaction) throw error;
            await savepoint(trx, 'rollback to savepoint unit');
            await savepoint(trx, 'release savepoint unit');
            outcomes.push({ ok: false, error, retry: isRetryable(error) && unit.attempts < MAX_ATTEMPTS });
          }
        }
        await options.finishUnits?.(trx);
        if (options.afterUnits && (options.wantsAfterUnits?.() ?? true)) {
          await savepoint(trx, 'savepoint after_units');
          try {
            await options.afterUnits(trx);
            await savepoint(trx, 'release savepoint after_units');
          } catch (error) {
            if (raw && !raw.inTransaction) throw error; // as for a unit, above
            await savepoint(trx, 'rollback to savepoint after_units');
            await savepoint(trx, 'release savepoint after_units');
            options.onError?.(error);
          }
        }
      });
      commits++;
    } catch (error) {
      // The commit itself failed: nothing of the batch is durable. Retry what may be retried.
      // A transaction refused before it took its batch (BEGIN: an I/O error, the write lock held
      // past its deadline) fails the units it would have taken; otherwise the worker would start
      // over at once, forever, answering no one (and, the refusal being synchronous, starving the
      // thread's event loop).
      if (batch.length === 0) batch = queue.splice(0, maxBatch);
      for (const unit of batch) {
        if (isRetryable(error) && unit.attempts < MAX_ATTEMPTS) { unit.attempts++; queue.push(unit); } else unit.reject(error);
      }
      return;
    }
    settle(batch, outcomes);
  }

  function settle(batch: Unit[], outcomes: Outcome[]): void {
    batch.forEach((unit, i) => {
      const o = outcomes[i]!;
      if (o.ok) unit.resolve(o.value);
      else if (o.retry) { unit.attempts++; queue.push(unit); }
      else unit.reject(o.error);
    });
    if (queue.length > 0) schedule();
  }

  async function worker(): Promise<void> {
    try {
      while (queue.length > 0) await runBatch();
    } finally {
      workers--;
    }
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    // Start on the next turn of the event loop, not now: concurrent requests still reading (auth,
    // policy) finish those reads first and join this commit instead of the next.
    setImmediate(() => {
      scheduled = false;
      while (workers < parallel && queue.length > 0) {
        workers++;
        void worker().then(() => { if (queue.length > 0) schedule(); });
      }
    });
  }

  return {
    get commits() { return commits; },
    run<T>(work: (trx: Tx) => Promise<T>, atomic?: Atomic<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, atomic, resolve: resolve as (v: unknown) => void, reject, attempts: 0 });
        if (workers < parallel) schedule();
      });
    },
  };
}

function perUnit(store: Store): Committer {
  let commits = 0;
  return {
    get commits() { return commits; },
    async run<T>(work: (trx: Tx) => Promise<T>, atomic?: Atomic<T>): Promise<T> {
      if (atomic) {
        // A deadlock or serialization failure of the one statement: the transaction (which retries) decides.
        const value = await (async () => atomic(store.db))().catch((error: unknown) => { if (isRetryable(error)) return undefined; throw error; });
        if (value !== undefined) { commits++; return value; }
      }
      for (let attempt = 1; ; attempt++) {
        try {
          const value = await store.transaction(work);
          commits++;
          return value;
        } catch (error) {
          if (!isRetryable(error) || attempt >= MAX_ATTEMPTS) throw error;
        }
      }
    },
  };
}
