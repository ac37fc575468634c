import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isId, newId, newMonotonicId } from '../../src/lib/ids.ts';

test('ids are prefixed, opaque, unique and sort by creation time', () => {
  const a = newId('dec', 1_700_000_000_000);
  const b = newId('dec', 1_700_000_000_001);
  assert.match(a, /^dec_[0-9a-z]{26}$/);
  assert.ok(a < b);
  assert.ok(isId(a, 'dec'));
  assert.ok(!isId(a, 'aud'));
  // Crockford base32 has no i, l, o or u; a prefix is matched whole, up to its underscore.
  for (const c of 'ilou') assert.ok(!isId(`dec_${c.repeat(26)}`), c);
  assert.ok(!isId(`prjx_${a.slice(4)}`, 'prj'));
  const many = new Set(Array.from({ length: 10_000 }, () => newId('aud')));
  assert.equal(many.size, 10_000);
});

test('an id is its millisecond in 10 base32 digits, then 16 random ones that each take all 32 values', () => {
  const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
  const digits = (value: number, n: number) => { let s = ''; for (let i = 0; i < n; i++) { s = ALPHABET[value % 32] + s; value = Math.floor(value / 32); } return s; };
  // Repeated and alternating milliseconds: the time part is remembered for the last one only.
  for (const ms of [0, 1, 1_700_000_000_000, 1_700_000_000_000, 1, 2 ** 48 - 1]) {
    const id = newId('aud', ms);
    assert.match(id, /^aud_[0-9a-hjkmnp-tv-z]{26}$/);
    assert.equal(id.slice(4, 14), digits(ms, 10), `time part of ${ms}`);
  }
  const seen = Array.from({ length: 16 }, () => new Set<string>());
  for (let i = 0; i < 5000; i++) [...newId('req').slice(14)].forEach((c, k) => seen[k]!.add(c));
  assert.ok(seen.every((s) => s.size === 32), 'each random position takes every character');
});

test('monotonic ids sort in the order they were minted, within a millisecond and when the clock steps back', () => {
  const ids: string[] = [];
  for (let i = 0; i < 5000; i++) ids.push(newMonotonicId('aud'));
  const t = Date.now() + 60_000;
  ids.push(newMonotonicId('aud', t), newMonotonicId('aud', t), newMonotonicId('aud', t - 1), newMonotonicId('aud', t - 60_000));
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.ok(isId(id, 'aud'), id);
  // A new millisecond starts from fresh random bits, not from the last id plus one.
  const a = newMonotonicId('aud', t + 1);
  const b = newMonotonicId('aud', t + 2);
  assert.notEqual(a.slice(14), b.slice(14));
});
