// toIso remembers the last millisecond it formatted: it must answer exactly what toISOString does,
// for repeated, alternating and unusual instants, and still refuse an invalid date.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toIso } from '../../src/lib/time.ts';

test('toIso is toISOString, for the same millisecond twice, alternating instants, and extreme years', () => {
  const instants = [0, 0, 1_764_000_000_123, 1_764_000_000_123, 1_764_000_000_124, 0, -1, -62_198_755_200_000, 8.64e15, -8.64e15, 1_764_000_000_123];
  for (const ms of instants) assert.equal(toIso(new Date(ms)), new Date(ms).toISOString(), `at ${ms}`);
});

test('toIso throws for an invalid date, as toISOString does, even right after a valid one', () => {
  toIso(new Date(5));
  assert.throws(() => toIso(new Date(Number.NaN)), RangeError);
  assert.equal(toIso(new Date(5)), new Date(5).toISOString());
});
