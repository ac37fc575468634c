// Login throttle counters in the database, so every instance behind a load balancer sees them.
import { afterFailure, boundedByNow, lockRemaining, ACCOUNT_LIMITS, ADDRESS_LIMITS, DEVICE_LIMITS, REGISTRATION_LIMITS, type ThrottleLimits, type ThrottleState } from '../../domain/access/throttle.ts';
import { lockFor, type Store, type Tx } from '../../store/store.ts';
import { clientAddress } from '../../domain/access/client-address.ts';

export const accountKey = (name: string) => `account:${name}`;
export const addressKey = (address: string) => `address:${clientAddress(address)}`;
/** A known device's own counter (its device cookie's nonce): used instead of the account's. */
export const deviceKey = (nonce: string) => `device:${nonce}`;

async function read(db: Store['db'] | Tx, key: string): Promise<ThrottleState | undefined> {
  return db.selectFrom('login_throttle').select(['failures', 'window_start', 'locked_until']).where('key', '=', key).executeTakeFirst();
}

async function write(trx: Tx, key: string, state: ThrottleState): Promise<void> {
  await trx.insertInto('login_throttle').values({ key, ...state })
    .onConflict((oc) => oc.column('key').doUpdateSet({ failures: state.failures, window_start: state.window_start, locked_until: state.locked_until }))
    .execute();
}

/**
 * Takes one login attempt for this account and address: refused (the milliseconds to wait) when
 * either is locked, else counted as a failure before the password is checked, so that concurrent
 * guesses cannot all pass the check before any of them is counted. A login that succeeds gives its
 * count back (`settleSuccess`).
 *
 * `device`, the nonce of a valid device cookie for this account: the attempt is then taken on the
 * device's counter (same limits) instead of the account's, so a lock someone else set on the
 * account does not stop its owner's known browser. A device that is itself locked takes the
 * account's path like any other client. The address counts either way (password spraying).
 */
export async function takeAttempt(store: Store, name: string, address: string, now: Date, device?: string): Promise<Attempt> {
  if (device !== undefined) {
    const taken = await take(store, [[deviceKey(device), DEVICE_LIMITS], [addressKey(address), ADDRESS_LIMITS]], now, { fallBackWhenFirstLocked: true });
    if (taken) return { wait: taken.wait, addressLock: taken.locks[1], device };
  }
  const taken = (await take(store, [[accountKey(name), ACCOUNT_LIMITS], [addressKey(address), ADDRESS_LIMITS]], now))!;
  return { wait: taken.wait, addressLock: taken.locks[1] }; // the account's, then the address's
}

/**
 * A counted login attempt: `wait` > 0 when refused; `addressLock`, the lock its count set on the
 * address and the one before; `device`, the device nonce it was counted on instead of the account.
 */
export interface Attempt { wait: number; addressLock?: { before: string | null; after: string | null } | undefined; device?: string }

/** Takes one registration from this address: refused (the milliseconds to wait) past REGISTRATION_LIMITS; never given back. */
export async function takeRegistration(store: Store, address: string, now: Date): Promise<number> {
  return (await take(store, [[`register:${clientAddress(address)}`, REGISTRATION_LIMITS]], now))!.wait;
}

type Taken = { wait: number; locks: { before: string | null; after: string | null }[] };

/** Undefined (nothing counted) when `fallBackWhenFirstLocked` and the first key is locked. */
async function take(store: Store, entries: readonly (readonly [string, ThrottleLimits])[], now: Date, options: { fallBackWhenFirstLocked?: boolean } = {}): Promise<Taken | undefined> {
  return store.transaction(async (trx) => {
    const states = [];
    // Locks in one order everywhere (device or account, then address), here and in settleSuccess.
    for (const [key, limits] of entries) {
      await lockFor(trx, store.dialect, `throttle:${key}`);
      const stored = await read(trx, key);
      const state = boundedByNow(stored, now, limits);
      // Kept even when the attempt is refused: otherwise every attempt would bound it afresh from its own now.
      if (state !== stored) await write(trx, key, state!);
      states.push({ key, limits, state });
    }
    if (options.fallBackWhenFirstLocked && lockRemaining(states[0]!.state, now) > 0) return undefined;
    const wait = Math.max(...states.map((s) => lockRemaining(s.state, now)));
    if (wait > 0) return { wait, locks: [] };
    const locks = [];
    for (const { key, limits, state } of states) {
      const next = afterFailure(state, now, limits);
      await write(trx, key, next);
      locks.push({ before: state?.locked_until ?? null, after: next.locked_until });
    }
    return { wait: 0, locks };
  });
}

/** Clears an account's counter and the lock it set (`gavel reset-password`: the lock went with the old password). */
export async function clearAccountCounter(trx: Tx, dialect: Store['dialect'], name: string): Promise<void> {
  const key = accountKey(name);
  await lockFor(trx, dialect, `throttle:${key}`);
  await trx.deleteFrom('login_throttle').where('key', '=', key).execute();
}

/**
 * A successful login clears the counter it was taken on (the account's, or the known device's: a
 * success on a device leaves the account's counter, and any lock an attacker ran up there, as it
 * was) and gives the address back the attempt it took: its count, and the lock that count set (an
 * address past its limit locked everyone there again at each right password, for twice as long
 * each time). A lock set since by another attempt stays.
 */
export async function settleSuccess(trx: Tx, dialect: Store['dialect'], name: string, address: string, attempt: Attempt): Promise<void> {
  const own = attempt.device !== undefined ? deviceKey(attempt.device) : accountKey(name);
  for (const key of [own, addressKey(address)]) await lockFor(trx, dialect, `throttle:${key}`);
  await trx.deleteFrom('login_throttle').where('key', '=', own).execute();
  const state = await read(trx, addressKey(address));
  if (!state || state.failures === 0) return;
  const failures = state.failures - 1;
  const ours = attempt.addressLock && state.locked_until === attempt.addressLock.after;
  const locked_until = failures < ADDRESS_LIMITS.lockAfter ? null : ours ? attempt.addressLock!.before : state.locked_until;
  await trx.updateTable('login_throttle').set({ failures, locked_until }).where('key', '=', addressKey(address)).execute();
}
