// The mark of a full disk (store/space.ts): which errors set it, that it is told once per episode,
// and that it ends at the next commit or FULL_FOR_MS after the last refusal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FULL_FOR_MS, outOfSpace, SpaceWatch } from '../../src/store/space.ts';

test('SQLITE_FULL and PostgreSQL 53100 are a full disk; other errors are not', () => {
  assert.ok(outOfSpace(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })));
  assert.ok(outOfSpace(Object.assign(new Error('could not extend file'), { code: '53100' })));
  for (const code of ['SQLITE_IOERR', '53200', '53300', '23505', undefined]) assert.equal(outOfSpace(Object.assign(new Error('x'), { code })), false, String(code));
  assert.equal(outOfSpace(null), false);
});

test('a refusal marks the disk full once; it counts as full until a commit, or FULL_FOR_MS after the last refusal', async () => {
  const space = new SpaceWatch();
  const told: boolean[] = [];
  space.onChange = (full) => told.push(full);
  const t = 1_000_000;
  space.refused(new Error('full'), t);
  space.refused(new Error('full'), t + 100);
  assert.deepEqual(told, [true]);
  assert.ok(space.full(t + 100 + FULL_FOR_MS - 1));
  // No write since to say otherwise: ready to be tried again, still marked until one commits.
  assert.equal(space.full(t + 100 + FULL_FOR_MS), false);
  assert.ok(space.marked);
  await space.clearedBy(Promise.reject(new Error('refused again'))).catch(() => {});
  assert.ok(space.marked);
  assert.equal(await space.clearedBy(Promise.resolve(7)), 7);
  assert.deepEqual([space.marked, space.full(t + 200), told], [false, false, [true, false]]);
});

test('the full window is timed on the monotonic clock: a wall clock stepped forward does not end it, nor one stepped back prolong it', () => {
  const space = new SpaceWatch();
  const wall = Date.now;
  try {
    space.refused(new Error('full'));
    Date.now = () => wall() + 3_600_000;
    assert.ok(space.full(), 'stepped forward an hour: still full, no time has passed');
    Date.now = () => wall() - 3_600_000;
    assert.ok(space.full());
    assert.equal(space.full(performance.now() + FULL_FOR_MS), false, 'stepped back an hour: ready to be tried FULL_FOR_MS later all the same');
  } finally { Date.now = wall; }
});
