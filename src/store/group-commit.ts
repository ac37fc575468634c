// Group commit: concurrent units of work share one transaction and one fsync, instead of paying
// one fsync each, without weakening durability: no unit's promise settles before the commit
// that holds it is durable. Each unit runs in its own savepoint, so one unit's failure rolls back
// only that unit. On PostgreSQL every unit gets its own transaction: several connections commit
// in parallel and the server groups WAL flushes itself.
import { sql } from 'kysely';
import type { Store, Tx } from './store.ts';

type Unit = { work: (trx: Tx) => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };

export interface Committer {
  run<T>(work: (trx: Tx) => Promise<T>): Promise<T>;
  /** Commits made so far (one per batch on SQLite, one per unit on PostgreSQL). */
  readonly commits: number;
}

export function createCommitter(store: Store, maxBatch = 256): Committer {
  if (store.dialect === 'postgres') {
    let commits = 0;
    return {
      run: async (work) => { const r = await store.transaction(work); commits++; return r; },
      get commits() { return commits; },
    };
  }

  let queue: Unit[] = [];
  let running = false;
  let commits = 0;

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      let batch: Unit[] = [];
      const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
      try {
        await store.transaction(async (trx) => {
          // Take the batch only once the connection is ours: every unit that queued while we
          // waited for it (behind other requests' reads) joins this commit.
          batch = queue.splice(0, maxBatch);
          for (const unit of batch) {
            await sql`savepoint unit`.execute(trx);
            try {
              const value = await unit.work(trx);
              await sql`release savepoint unit`.execute(trx);
              outcomes.push({ ok: true, value });
            } catch (error) {
              await sql`rollback to savepoint unit`.execute(trx);
              await sql`release savepoint unit`.execute(trx);
              outcomes.push({ ok: false, error });
            }
          }
        });
        commits++;
      } catch (error) {
        // The commit itself failed: nothing of the batch is durable, so every unit fails.
        for (const unit of batch) unit.reject(error);
        continue;
      }
      batch.forEach((unit, i) => {
        const o = outcomes[i]!;
        if (o.ok) unit.resolve(o.value); else unit.reject(o.error);
      });
    }
    running = false;
  }

  return {
    get commits() { return commits; },
    run<T>(work: (trx: Tx) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
        if (!running) {
          // Start on the next turn of the event loop, not now: concurrent requests still reading
          // (auth, policy) finish those reads first and join this commit instead of the next.
          running = true;
          setImmediate(() => void drain());
        }
      });
    },
  };
}
