// The benchmarks' settings from the environment (bench/lib/env-count.ts): a typo or a value out of
// range stops the run with the variable's name, where Number() would have run with NaN or 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countFromEnv, countsFromEnv, secondsFromEnv } from '../../bench/lib/env-count.ts';

/** Runs `fn` with `name` set to `value` (or unset), then restores the environment. */
function withEnv<T>(name: string, value: string | undefined, fn: () => T): T {
  const before = process.env[name];
  if (value === undefined) delete process.env[name]; else process.env[name] = value;
  try { return fn(); } finally { if (before === undefined) delete process.env[name]; else process.env[name] = before; }
}
const NAME = 'GAVEL_TEST_ENV_COUNT';

test('a count: the fallback when unset or empty, the number when whole and in range, else an error naming the variable', () => {
  assert.equal(withEnv(NAME, undefined, () => countFromEnv(NAME, 6)), 6);
  assert.equal(withEnv(NAME, '', () => countFromEnv(NAME, 6)), 6);
  assert.equal(withEnv(NAME, '12', () => countFromEnv(NAME, 6)), 12);
  assert.equal(withEnv(NAME, '0', () => countFromEnv(NAME, 6, { min: 0 })), 0);
  for (const bad of ['1O', '2.5', '-3', ' 4', 'six', '0']) {
    assert.throws(() => withEnv(NAME, bad, () => countFromEnv(NAME, 6)), (e: Error) => e.message.startsWith(`${NAME} must be an integer between 1 and 1000`), bad);
  }
  assert.throws(() => withEnv(NAME, '20001', () => countFromEnv(NAME, 6, { max: 20_000 })), /between 1 and 20000, got 20001/);
});

test('a list of counts: each item checked the same way', () => {
  assert.deepEqual(withEnv(NAME, undefined, () => countsFromEnv(NAME, [20, 64])), [20, 64]);
  assert.deepEqual(withEnv(NAME, '20, 128,256', () => countsFromEnv(NAME, [20])), [20, 128, 256]);
  assert.throws(() => withEnv(NAME, '20,x', () => countsFromEnv(NAME, [20])), new RegExp(`^Error: ${NAME} must be an integer`));
});

test('seconds: a positive decimal in range, else an error naming the variable', () => {
  assert.equal(withEnv(NAME, undefined, () => secondsFromEnv(NAME, 1.5)), 1.5);
  assert.equal(withEnv(NAME, '', () => secondsFromEnv(NAME, 1.5)), 1.5);
  assert.equal(withEnv(NAME, '0.5', () => secondsFromEnv(NAME, 1.5)), 0.5);
  assert.equal(withEnv(NAME, '3', () => secondsFromEnv(NAME, 1.5)), 3);
  for (const bad of ['1,5', '.5', '1.', '-1', '0', '1e3', 'NaN', '7200']) {
    assert.throws(() => withEnv(NAME, bad, () => secondsFromEnv(NAME, 1.5)), (e: Error) => e.message === `${NAME} must be a number of seconds between 0.1 and 3600, got "${bad}"`, bad);
  }
});
