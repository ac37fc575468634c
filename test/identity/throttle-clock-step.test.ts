// Login throttle counters hold wall-clock instants, shared by every instance. A lock is never set
// for longer than its limits' maxLockMs; when the clock steps back, one that reads longer cannot
// be timed, and counting it to its stored end locked the account (or a whole address) for as long
// as the step, an hour's step an hour, where a lock lasts 15 minutes at most.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { takeAttempt } from '../../src/services/identity/throttle.ts';
import { ACCOUNT_LIMITS } from '../../src/domain/access/throttle.ts';

const HOUR = 3_600_000;

for (const backend of backends()) {
  test(`a lock read after the clock stepped back lasts no longer than the longest lock (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const t = Date.now();
      for (let i = 0; i < ACCOUNT_LIMITS.lockAfter; i++) assert.equal((await takeAttempt(ts.store, 'alice', '192.0.2.7', new Date(t))).wait, 0);
      assert.equal((await takeAttempt(ts.store, 'alice', '192.0.2.7', new Date(t))).wait, ACCOUNT_LIMITS.baseLockMs, 'locked');
      const back = t - HOUR;
      const wait = (await takeAttempt(ts.store, 'alice', '192.0.2.7', new Date(back))).wait;
      assert.ok(wait > 0 && wait <= ACCOUNT_LIMITS.maxLockMs, `still locked, for at most maxLockMs: ${wait}`);
      assert.equal((await takeAttempt(ts.store, 'alice', '192.0.2.7', new Date(back + ACCOUNT_LIMITS.maxLockMs))).wait, 0, 'and over by then');
      // Still counting within the window: the next failure locks again, for longer.
      assert.ok((await takeAttempt(ts.store, 'alice', '192.0.2.7', new Date(back + ACCOUNT_LIMITS.maxLockMs))).wait > ACCOUNT_LIMITS.baseLockMs);
    } finally { await ts.cleanup(); }
  });

  test(`a window read after the clock stepped back starts then, and ends a window later (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const t = Date.now();
      for (let i = 0; i < ACCOUNT_LIMITS.lockAfter - 2; i++) assert.equal((await takeAttempt(ts.store, 'bob', '192.0.2.8', new Date(t))).wait, 0);
      const back = t - HOUR;
      assert.equal((await takeAttempt(ts.store, 'bob', '192.0.2.8', new Date(back))).wait, 0, 'one short of the lock');
      // A window after the one the step began: those failures no longer count, so two more lock nothing.
      const later = back + ACCOUNT_LIMITS.windowMs + 1;
      assert.equal((await takeAttempt(ts.store, 'bob', '192.0.2.8', new Date(later))).wait, 0);
      assert.equal((await takeAttempt(ts.store, 'bob', '192.0.2.8', new Date(later))).wait, 0, 'the old window still counted');
    } finally { await ts.cleanup(); }
  });
}
