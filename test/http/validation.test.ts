// Well-formed Unicode check on every body: the fast path must agree with the walk that names the
// culprit, at any depth and position, for member names and values alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { illFormedString } from '../../src/http/validation.ts';

test('illFormedString: null for well-formed bodies, the JSON pointer of the first lone surrogate otherwise', () => {
  assert.equal(illFormedString({ a: ['x', { b: '😀' }], c: null, d: 1 }), null);
  assert.equal(illFormedString('\ud800'), '');
  assert.equal(illFormedString({ a: ['x', { 'b/~': 'ok\udfff' }] }), '/a/1/b~1~0');
  assert.equal(illFormedString({ a: 1, ['\ud800k']: 2 }), '/\ud800k');
  assert.equal(illFormedString([1, 2, ['\ud800']]), '/2/0');
});

test('illFormedString: deep nesting neither overflows the stack nor hides a culprit', () => {
  let deep: unknown = 'ok';
  for (let i = 0; i < 50_000; i++) deep = [deep];
  assert.equal(illFormedString(deep), null);
  let bad: unknown = '\ud800';
  for (let i = 0; i < 50_000; i++) bad = { k: bad };
  assert.equal(illFormedString(bad), '/k'.repeat(50_000));
});
