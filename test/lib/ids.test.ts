import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstIdAt, isId, LAST_ID_MS, newId, newMonotonicId, newStampedId, STAMPED_ID_LEAD_MS } from '../../src/lib/ids.ts';

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

test('a stamped id is minted in its stamp\'s millisecond or at most the lead after it, monotonic within that, whatever the thread minted before', () => {
  const msOf = (id: string) => { let v = 0; for (const c of id.slice(4, 14)) v = v * 32 + '0123456789abcdefghjkmnpqrstvwxyz'.indexOf(c); return v; };
  const t = Date.now() + 3_600_000;
  // Written in this order: a step forward, steps back within the lead and beyond it, repeats, a stamp behind the thread's clock.
  const stamps = [t, t, t - 1, t - STAMPED_ID_LEAD_MS, t - STAMPED_ID_LEAD_MS - 1, t - STAMPED_ID_LEAD_MS - 1, t - 10_000, t - 9_999, t + 1, 1_700_000_000_000, 1_700_000_000_000, -5, 2 ** 48];
  const ids = stamps.map((at) => newStampedId('aud', at));
  stamps.forEach((at, i) => {
    const ms = Math.min(Math.max(at, 0), LAST_ID_MS);
    assert.ok(msOf(ids[i]!) >= ms && msOf(ids[i]!) <= ms + STAMPED_ID_LEAD_MS, `${ids[i]} stamped ${at}`);
    assert.ok(ids[i]! >= firstIdAt('aud', ms) && ids[i]! < firstIdAt('aud', ms + STAMPED_ID_LEAD_MS + 1), `${ids[i]} in its range`);
  });
  // Within the lead the thread's ids stay monotonic; past it, so do ids of one stamp.
  assert.ok(ids[0]! < ids[1]! && ids[1]! < ids[2]! && ids[2]! < ids[3]!);
  assert.ok(ids[4]! < ids[5]! && ids[9]! < ids[10]!);
  assert.equal(new Set(ids).size, ids.length);
});
