// RFC 6901 pointers as an operation's amount names them (decision 0406): evaluated over own members
// and array indexes only, so a payload's prototype or an array's length is never taken for an amount.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMemberPointer, valueAt } from '../../src/lib/json-pointer.ts';

test('valueAt: members, escapes and array indexes; undefined where nothing is', () => {
  const doc = { amount: 100, 'a/b': { 'c~d': [5, { minor: 7 }] }, '': 1, zero: 0 };
  assert.equal(valueAt(doc, '/amount'), 100);
  assert.equal(valueAt(doc, '/a~1b/c~0d/0'), 5);
  assert.equal(valueAt(doc, '/a~1b/c~0d/1/minor'), 7);
  assert.equal(valueAt(doc, '/'), 1, 'the member named ""');
  assert.equal(valueAt(doc, '/zero'), 0);
  for (const p of ['/missing', '/amount/x', '/a~1b/c~0d/01', '/a~1b/c~0d/2', '/a~1b/c~0d/length', '/constructor', '/toString', '/__proto__', '/a~1b/c~0d/-']) {
    assert.equal(valueAt(doc, p), undefined, p);
  }
});

test('isMemberPointer: a non-empty pointer whose "~" is only "~0" or "~1"', () => {
  for (const p of ['/amount', '/', '/a~0b~1c', '/total/0/minor', '//x']) assert.equal(isMemberPointer(p), true, p);
  for (const p of ['', 'amount', '/a~2', '/a~', '#/amount']) assert.equal(isMemberPointer(p), false, p);
});
