// The benchmarks' reading of V8's --trace-gc lines (bench/lib/trace-gc.ts), on lines Node 24 printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { eachLine, parseGcLine } from '../../bench/lib/trace-gc.ts';

test('a scavenge, a mark-compact and a reducing mark-compact are read; other lines are not', () => {
  assert.deepEqual(parseGcLine('[9071:0x7fb050001000]    20302 ms: Scavenge 33.6 (53.6) -> 20.8 (53.6) MB, pooled: 0 MB, 0.41 / 0.00 ms  (average mu = 0.999, current mu = 0.999) task; '),
    { isolate: '0x7fb050001000', kind: 'Scavenge', before: 33.6, after: 20.8, pause: 0.41 });
  assert.deepEqual(parseGcLine('[9071:0x3a5fe000]    37991 ms: Mark-Compact  61.0 (87.4) -> 37.6 (82.5) MB, pooled: 1 MB, 4.95 / 0.01 ms  (+ 14.3 ms in 370 steps since start of marking)'),
    { isolate: '0x3a5fe000', kind: 'Mark-Compact', before: 61.0, after: 37.6, pause: 4.95 });
  assert.deepEqual(parseGcLine('[1:0x1]  5 ms: Mark-Compact (reduce) 12.5 (14.0) -> 9.5 (13.0) MB, 2.10 / 0.00 ms  (average mu = 1.000) memory reducer'),
    { isolate: '0x1', kind: 'Mark-Compact', before: 12.5, after: 9.5, pause: 2.1 });
  assert.equal(parseGcLine('Gavel is running (SQLite at /tmp/x/gavel.db).'), undefined);
  assert.equal(parseGcLine('loop-lag 1795527790798.5 5.2'), undefined);
});

test('whole lines are delivered across chunk boundaries, and a trailing partial line waits', () => {
  const stream = new PassThrough();
  const lines: string[] = [];
  eachLine(stream, (l) => lines.push(l));
  stream.write('first li');
  stream.write('ne\nsecond\nthi');
  assert.deepEqual(lines, ['first line', 'second']);
  stream.write('rd\n');
  assert.deepEqual(lines, ['first line', 'second', 'third']);
});
