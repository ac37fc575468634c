// Rows that no longer decide anything, deleted so that the tables do not grow with every failed
// guess and every sign-in: throttle counters whose window and lock have long passed (an absent row
// and a stale one mean the same to `afterFailure`, and writes upsert, so a row deleted under a
// racing attempt is simply written again), and sessions that ended, expired or went idle a while
// ago (their start and end are audit events; the row only resolved a cookie). Decision 0206.
//
// A run deletes in batches, each its own short statement, and stops after a bounded number: one
// statement over a day of guesses at random names (a million rows) would hold SQLite's write lock,
// and the event loop of the process running it, for seconds, stalling every decision meanwhile.
// What a capped run leaves is taken by the next, which then comes soon rather than an hour later.
import { SESSION_LIFETIMES } from '../../domain/access/session-lifetime.ts';
import type { Store } from '../../store/store.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** How long a finished row is kept before it is deleted: a day, far beyond every window and lock (15 min). */
export const PRUNE_AFTER_MS = 24 * 3600_000;
/** How often the service prunes. */
export const PRUNE_EVERY_MS = 3600_000;
/** How soon the next run comes when a run stopped at its cap with rows left. */
export const PRUNE_BACKLOG_EVERY_MS = 60_000;
/** Rows one statement deletes at most, and statements per table one run makes at most. */
export const PRUNE_BATCH = 500;
export const PRUNE_MAX_BATCHES = 40;

export interface PruneLimits { batch: number; maxBatches: number }
/** Rows deleted from each table; `more`: a table reached the cap, so rows may be left for the next run. */
export interface Pruned { throttle: number; sessions: number; more: boolean }

/**
 * Deletes finished throttle counters and sessions, at most `maxBatches` statements of `batch` rows
 * per table. Safe beside other instances doing the same: on PostgreSQL each statement takes the
 * rows it deletes `for update skip locked`, so two runs share the rows out rather than wait on (or
 * deadlock over) each other's, and a row a login holds is left for a later run.
 */
export async function pruneIdentityRows(store: Store, now: Date, limits: PruneLimits = { batch: PRUNE_BATCH, maxBatches: PRUNE_MAX_BATCHES }, stopping: () => boolean = () => false): Promise<Pruned> {
  const before = new Date(now.getTime() - PRUNE_AFTER_MS).toISOString();
  const idleBefore = new Date(now.getTime() - PRUNE_AFTER_MS - SESSION_LIFETIMES.idleMs).toISOString();
  const skipLocked = store.dialect === 'postgres';
  const throttle = await inBatches(limits, stopping, async () => Number((await store.db.deleteFrom('login_throttle')
    .where('key', 'in', store.db.selectFrom('login_throttle').select('key')
      .where('window_start', '<', before)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', before)]))
      .limit(limits.batch).$if(skipLocked, (q) => q.forUpdate().skipLocked()))
    .executeTakeFirst()).numDeletedRows));
  const sessions = await inBatches(limits, stopping, async () => Number((await store.db.deleteFrom('sessions')
    .where('id', 'in', store.db.selectFrom('sessions').select('id')
      .where((eb) => eb.or([eb('ended_at', '<', before), eb('expires_at', '<', before), eb('last_seen_at', '<', idleBefore)]))
      .limit(limits.batch).$if(skipLocked, (q) => q.forUpdate().skipLocked()))
    .executeTakeFirst()).numDeletedRows));
  return { throttle: throttle.deleted, sessions: sessions.deleted, more: throttle.capped || sessions.capped };
}

/** Runs `deleteBatch` until a batch comes back short, the cap is reached or the service stops. */
async function inBatches(limits: PruneLimits, stopping: () => boolean, deleteBatch: () => Promise<number>): Promise<{ deleted: number; capped: boolean }> {
  let deleted = 0;
  for (let i = 0; i < limits.maxBatches; i++) {
    if (stopping()) return { deleted, capped: false };
    const n = await deleteBatch();
    deleted += n;
    if (n < limits.batch) return { deleted, capped: false };
    await nextTurn(); // requests waiting on this process are served between batches
  }
  return { deleted, capped: true };
}

export interface IdentityPruner {
  /** One run now (tests, with an advanced clock); runs never overlap. */
  run(): Promise<Pruned>;
  /** No more runs; waits for one in progress to end after its current batch. */
  stop(): Promise<void>;
}

/**
 * Prunes every PRUNE_EVERY_MS, or PRUNE_BACKLOG_EVERY_MS after a run that stopped at its cap. Every
 * instance runs it (none is special to identity); skip locked keeps their runs apart.
 */
export function startIdentityPruning(store: Store, now: () => Date, onError: (err: unknown) => void): IdentityPruner {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<Pruned> | undefined;
  const run = (): Promise<Pruned> => {
    running ??= pruneIdentityRows(store, now(), undefined, () => stopped).finally(() => { running = undefined; });
    return running;
  };
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      run().then((r) => schedule(r.more ? PRUNE_BACKLOG_EVERY_MS : PRUNE_EVERY_MS),
        (err: unknown) => { onError(err); schedule(PRUNE_EVERY_MS); });
    }, ms);
    timer.unref();
  };
  schedule(PRUNE_EVERY_MS);
  return {
    run,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
