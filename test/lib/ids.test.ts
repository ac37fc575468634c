import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isId, newId } from '../../src/lib/ids.ts';

test('ids are prefixed, opaque, unique and sort by creation time', () => {
  const a = newId('dec', 1_700_000_000_000);
  const b = newId('dec', 1_700_000_000_001);
  assert.match(a, /^dec_[0-9a-z]{26}$/);
  assert.ok(a < b);
  assert.ok(isId(a, 'dec'));
  assert.ok(!isId(a, 'aud'));
  const many = new Set(Array.from({ length: 10_000 }, () => newId('aud')));
  assert.equal(many.size, 10_000);
});
