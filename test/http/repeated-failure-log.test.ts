// A lasting failure is logged once a minute (repeated-failure-log.ts), and its end once, with how
// many failures there were and how long they lasted; an outage after that one is logged at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { repeatedFailureLog } from '../../src/http/repeated-failure-log.ts';

function logged() {
  const lines: { level: 'error' | 'warn'; fields: Record<string, unknown>; msg: string }[] = [];
  const log = {
    error: (fields: Record<string, unknown>, msg: string) => { lines.push({ level: 'error', fields, msg }); },
    warn: (fields: Record<string, unknown>, msg: string) => { lines.push({ level: 'warn', fields, msg }); },
  };
  return { lines, log: log as never };
}

test('an outage\'s end is said once, with its failures and how long they lasted from the first; the next outage counts afresh and is logged at once', () => {
  const { lines, log } = logged();
  let now = 1_000;
  const fail = repeatedFailureLog(log, 'down', () => 'same', () => now);
  fail.recovered('up');
  assert.equal(lines.length, 0, 'no failure: no end to tell');
  assert.equal(fail.failing, false);
  fail(new Error('x'));
  now += 4_000;
  fail(new Error('x'));
  now += 1_000;
  assert.equal(fail.failing, true);
  fail.recovered('up');
  assert.deepEqual(lines.map((l) => [l.level, l.msg]), [['error', 'down'], ['warn', 'up']]);
  assert.deepEqual(lines[1]!.fields, { failures: 2, lasted_ms: 5_000 });
  assert.equal(fail.failing, false);
  fail.recovered('up');
  assert.equal(lines.length, 2, 'said once');
  // Within the minute of the first outage's line, the same failure again: a new outage, logged.
  now += 1_000;
  fail(new Error('x'));
  assert.deepEqual(lines.map((l) => l.msg), ['down', 'up', 'down']);
  assert.equal(lines[2]!.fields.repeated, undefined);
  now += 2_000;
  fail.recovered('up');
  assert.deepEqual(lines[3]!.fields, { failures: 1, lasted_ms: 2_000 });
});
