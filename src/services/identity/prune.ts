// Rows that no longer decide anything, deleted so that the tables do not grow with every failed
// guess and every sign-in: throttle counters whose window and lock have long passed (an absent row
// and a stale one mean the same to `afterFailure`, and writes upsert, so a row deleted under a
// racing attempt is simply written again), and sessions that ended, expired or went idle a while
// ago (their start and end are audit events; the row only resolved a cookie).
import { SESSION_LIFETIMES } from '../../domain/access/session-lifetime.ts';
import type { Store } from '../../store/store.ts';

/** How long a finished row is kept before it is deleted: a day, far beyond every window and lock (15 min). */
export const PRUNE_AFTER_MS = 24 * 3600_000;
/** How often the service prunes. */
export const PRUNE_EVERY_MS = 3600_000;

export async function pruneIdentityRows(store: Store, now: Date): Promise<{ throttle: number; sessions: number }> {
  const before = new Date(now.getTime() - PRUNE_AFTER_MS).toISOString();
  const idleBefore = new Date(now.getTime() - PRUNE_AFTER_MS - SESSION_LIFETIMES.idleMs).toISOString();
  const throttle = await store.db.deleteFrom('login_throttle')
    .where('window_start', '<', before)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', before)]))
    .executeTakeFirst();
  const sessions = await store.db.deleteFrom('sessions')
    .where((eb) => eb.or([eb('ended_at', '<', before), eb('expires_at', '<', before), eb('last_seen_at', '<', idleBefore)]))
    .executeTakeFirst();
  return { throttle: Number(throttle.numDeletedRows), sessions: Number(sessions.numDeletedRows) };
}
