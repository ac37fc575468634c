// parseInstant is the one reading of every instant a caller sends.
// toIso remembers the last millisecond it formatted: it must answer exactly what toISOString does,
// for repeated, alternating and unusual instants, and still refuse an invalid date.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FIRST_ISO_INSTANT, toIso } from '../../src/lib/time.ts';
import { parseInstant } from '../../src/lib/instant.ts';

test('toIso is toISOString, for the same millisecond twice, alternating instants, and extreme years', () => {
  const instants = [0, 0, 1_764_000_000_123, 1_764_000_000_123, 1_764_000_000_124, 0, -1, -62_198_755_200_000, 8.64e15, -8.64e15, 1_764_000_000_123];
  for (const ms of instants) assert.equal(toIso(new Date(ms)), new Date(ms).toISOString(), `at ${ms}`);
});

test('toIso throws for an invalid date, as toISOString does, even right after a valid one', () => {
  toIso(new Date(5));
  assert.throws(() => toIso(new Date(Number.NaN)), RangeError);
  assert.equal(toIso(new Date(5)), new Date(5).toISOString());
});

test('parseInstant reads every accepted spelling of one instant alike, and nothing else', () => {
  const at = Date.UTC(2030, 0, 1);
  for (const s of ['2030-01-01T00:00:00Z', '2030-01-01T01:00:00+01:00', '2029-12-31T18:30:00-05:30', '2030-01-01T00:00:00-00:00', '2030-01-01T00:00:00.0Z', '2030-01-01T00:00:00.000000000Z']) {
    assert.equal(parseInstant(s), at, s);
  }
  assert.equal(parseInstant('2030-01-01T00:00:00.123456789Z'), at + 123, 'a finer fraction is truncated');
  assert.equal(parseInstant('1969-12-31T23:59:59.5Z'), -500);
  assert.equal(parseInstant('0000-01-01T00:00:00Z'), FIRST_ISO_INSTANT);
  for (const s of ['2029-12-31T23:59:60Z', '2030-01-01t00:00:00z', '2030-01-01T00:00:00z', '2030-01-01T01:00:00+01', '2030-01-01T01:00:00+0100',
    '2030-01-01 00:00:00Z', '2030-01-01T00:00:00', '2030-01-01T00:00:00.Z', '2030-02-29T00:00:00Z', '2030-01-01T00:00:00+24:00', '+012030-01-01T00:00:00Z']) {
    assert.equal(parseInstant(s), null, s);
  }
});
