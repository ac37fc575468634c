// The writer thread's table of calls awaiting an outcome (services/writer/pending-calls.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PendingCalls } from '../../src/services/writer/pending-calls.ts';

test('pending calls: ids are never given twice though slots are reused; a taken or unknown id finds nothing', () => {
  const calls = new PendingCalls<string>();
  const a = calls.add('a');
  const b = calls.add('b');
  assert.notEqual(a, b);
  assert.equal(calls.size, 2);
  assert.equal(calls.take(a), 'a');
  assert.equal(calls.take(a), undefined, 'taken once only');
  const c = calls.add('c'); // reuses a's slot
  assert.notEqual(c, a, 'a reused slot still gets a new id');
  assert.equal(calls.take(a), undefined, "a stale id does not reach the slot's new call");
  assert.equal(calls.take(12345), undefined);
  assert.deepEqual(calls.ids().sort(), [b, c].sort());
  assert.equal(calls.take(b), 'b');
  assert.equal(calls.take(c), 'c');
  assert.equal(calls.size, 0);
  assert.deepEqual(calls.ids(), []);
});

test('pending calls: many in flight, taken in any order, each exactly once', () => {
  const calls = new PendingCalls<number>();
  const seen = new Set<number>();
  const held: [number, number][] = [];
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < 40; i++) {
      const v = round * 100 + i;
      const id = calls.add(v);
      assert.ok(!seen.has(id), 'fresh id');
      seen.add(id);
      held.push([id, v]);
    }
    // Take about half, from the middle out: outcomes come back in any order.
    for (let i = 0; i < 20; i++) {
      const [id, v] = held.splice(Math.floor(held.length / 2), 1)[0]!;
      assert.equal(calls.take(id), v);
    }
  }
  assert.equal(calls.size, held.length);
  for (const [id, v] of held) assert.equal(calls.take(id), v);
  assert.equal(calls.size, 0);
});

test('pending calls: the serial wraps, and ids stay exact integers and distinct across the wrap', () => {
  const calls = new PendingCalls<string>({ serial: 2 ** 32 - 3 });
  const ids: number[] = [];
  for (let i = 0; i < 6; i++) {
    const id = calls.add(`c${i}`);
    assert.ok(Number.isSafeInteger(id) && id < 2 ** 52, `id ${id} is exact`);
    ids.push(id);
    if (i % 2 === 1) assert.equal(calls.take(id), `c${i}`); // slots get reused across the wrap
  }
  assert.equal(new Set(ids).size, ids.length, 'distinct');
  for (const [i, id] of ids.entries()) if (i % 2 === 0) assert.equal(calls.take(id), `c${i}`);
  assert.equal(calls.size, 0);
});
