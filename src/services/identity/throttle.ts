// Login throttle counters in the database, so every instance behind a load balancer sees them.
import { afterFailure, lockRemaining, ACCOUNT_LIMITS, ADDRESS_LIMITS, type ThrottleState } from '../../domain/access/throttle.ts';
import { lockFor, type Store, type Tx } from '../../store/store.ts';

export const accountKey = (name: string) => `account:${name}`;
export const addressKey = (address: string) => `address:${address}`;

async function read(db: Store['db'] | Tx, key: string): Promise<ThrottleState | undefined> {
  return db.selectFrom('login_throttle').select(['failures', 'window_start', 'locked_until']).where('key', '=', key).executeTakeFirst();
}

/** Milliseconds before another attempt for this account or address is allowed (0: go ahead). */
export async function throttleWait(store: Store, name: string, address: string, now: Date): Promise<number> {
  const [a, b] = await Promise.all([read(store.db, accountKey(name)), read(store.db, addressKey(address))]);
  return Math.max(lockRemaining(a, now), lockRemaining(b, now));
}

/** Counts one failed login against the account name (known or not) and the address. */
export async function recordFailure(store: Store, name: string, address: string, now: Date): Promise<void> {
  await store.transaction(async (trx) => {
    for (const [key, limits] of [[accountKey(name), ACCOUNT_LIMITS], [addressKey(address), ADDRESS_LIMITS]] as const) {
      await lockFor(trx, store.dialect, `throttle:${key}`);
      const next = afterFailure(await read(trx, key), now, limits);
      await trx.insertInto('login_throttle').values({ key, ...next })
        .onConflict((oc) => oc.column('key').doUpdateSet({ failures: next.failures, window_start: next.window_start, locked_until: next.locked_until }))
        .execute();
    }
  });
}

/** A successful login clears the account's counter (the address keeps its own). */
export async function clearAccount(trx: Tx, name: string): Promise<void> {
  await trx.deleteFrom('login_throttle').where('key', '=', accountKey(name)).execute();
}
