// The machine's-stall probe (bench/lib/hiccup-probe.ts) and how bench:authorize matches its stalls
// to a measured window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startHiccupProbe, stallsWithin } from '../../bench/lib/hiccup-probe.ts';

test('stallsWithin counts only the stalls inside the window, and the longest of them', () => {
  const stalls = [{ at: 999, ms: 50 }, { at: 1000, ms: 4 }, { at: 1500, ms: 12.5 }, { at: 2000, ms: 3.2 }, { at: 2001, ms: 80 }];
  assert.deepEqual(stallsWithin(stalls, { from: 1000, until: 2000 }), { n: 3, longestMs: 12.5 });
  assert.deepEqual(stallsWithin(stalls, { from: 3000, until: 4000 }), { n: 0, longestMs: 0 });
  assert.deepEqual(stallsWithin([], { from: 0, until: Infinity }), { n: 0, longestMs: 0 });
});

test('the probe runs on a thread of its own: a blocked main thread is not a stall of the machine', async () => {
  const probe = startHiccupProbe();
  // Long enough for the worker to be probing before this thread blocks, so the check below means something.
  await new Promise((r) => setTimeout(r, 200));
  const from = Date.now();
  const until = from + 150;
  while (Date.now() < until) { /* this thread busy for 150 ms, as a server thread could be */ }
  await new Promise((r) => setTimeout(r, 50));
  const stalls = await probe.stop();
  assert.ok(Array.isArray(stalls));
  for (const s of stalls) assert.ok(s.ms > 3 && Number.isFinite(s.at), 'each stall is a wake-up over 3 ms late, with when it was due');
  // On a busy CI machine the probe may see a real stall or two; it must not see this thread's 150 ms.
  assert.ok(stalls.every((s) => s.ms < 140), `the main thread's busy spell was not reported (${JSON.stringify(stalls)})`);
});
