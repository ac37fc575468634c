// Login throttling by counter, per account and per address. Pure: state in, state out.
// Within a window, the `lockAfter`-th failure and every later one lock the key for a delay that
// doubles (base, 2*base, ...) up to `maxLockMs`. A window with no failure starts afresh.

export interface ThrottleLimits { lockAfter: number; windowMs: number; baseLockMs: number; maxLockMs: number }
export interface ThrottleState { failures: number; window_start: string; locked_until: string | null }

export const ACCOUNT_LIMITS: ThrottleLimits = { lockAfter: 5, windowMs: 15 * 60_000, baseLockMs: 30_000, maxLockMs: 15 * 60_000 };
/** A known device (valid device cookie), counted instead of its account: the account's limits. */
export const DEVICE_LIMITS: ThrottleLimits = ACCOUNT_LIMITS;
export const ADDRESS_LIMITS: ThrottleLimits = { lockAfter: 50, windowMs: 15 * 60_000, baseLockMs: 30_000, maxLockMs: 15 * 60_000 };
/** Registrations from one address, taken or refused alike: each costs an Argon2id hash, and a refusal says a name exists. */
export const REGISTRATION_LIMITS: ThrottleLimits = { lockAfter: 60, windowMs: 15 * 60_000, baseLockMs: 60_000, maxLockMs: 15 * 60_000 };

/** Milliseconds until `state` allows an attempt at `now` (0 when it does). */
export function lockRemaining(state: ThrottleState | undefined, now: Date): number {
  if (!state?.locked_until) return 0;
  return Math.max(0, Date.parse(state.locked_until) - now.getTime());
}

/**
 * `state` as the present clock can time it. A lock never lasts longer than `maxLockMs` and a window
 * never starts after now, so a state that says otherwise was written before the clock stepped back:
 * its lock ends at most `maxLockMs` from now and its window starts now (its failures still count).
 * Read as stored, an hour's step kept a lock for an hour.
 */
export function boundedByNow(state: ThrottleState | undefined, now: Date, limits: ThrottleLimits): ThrottleState | undefined {
  if (!state) return state;
  const t = now.getTime();
  const lockTooLong = state.locked_until !== null && Date.parse(state.locked_until) - t > limits.maxLockMs;
  const windowAhead = Date.parse(state.window_start) > t;
  if (!lockTooLong && !windowAhead) return state;
  return {
    failures: state.failures,
    window_start: windowAhead ? now.toISOString() : state.window_start,
    locked_until: lockTooLong ? new Date(t + limits.maxLockMs).toISOString() : state.locked_until,
  };
}

/** The state after one more failure at `now`. */
export function afterFailure(state: ThrottleState | undefined, now: Date, limits: ThrottleLimits): ThrottleState {
  const fresh = !state || now.getTime() - Date.parse(state.window_start) > limits.windowMs;
  const failures = fresh ? 1 : state.failures + 1;
  const window_start = fresh ? now.toISOString() : state.window_start;
  if (failures < limits.lockAfter) return { failures, window_start, locked_until: null };
  const over = Math.min(failures - limits.lockAfter, 30);
  const lock = Math.min(limits.baseLockMs * 2 ** over, limits.maxLockMs);
  return { failures, window_start, locked_until: new Date(now.getTime() + lock).toISOString() };
}
