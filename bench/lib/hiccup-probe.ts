// The machine's own stalls while a benchmark runs: a worker thread sleeps 1 ms at a time and notes
// every wake-up more than 3 ms late. Nothing else runs on that thread, so lateness there is the
// hypervisor or the scheduler holding a vCPU, not anything the server did (bench/tail-episodes.ts).
import { startProbeWorker } from './probe-worker.ts';

export interface HiccupProbe {
  /** Stops the probe: each late wake-up, when it was due (ms since the Unix epoch) and how late. */
  stop(): Promise<{ at: number; ms: number }[]>;
}

const body = `
const { parentPort } = require('node:worker_threads');
const cell = new Int32Array(new SharedArrayBuffer(4));
const late = [];
let stop = false;
parentPort.on('message', () => { stop = true; });
(function loop() {
  for (let i = 0; i < 200 && !stop; i++) {
    const t = performance.now();
    Atomics.wait(cell, 0, 0, 1);
    const ms = performance.now() - t - 1;
    if (ms > 3) late.push({ at: performance.timeOrigin + t + 1, ms });
  }
  if (stop) parentPort.postMessage(late); else setImmediate(loop);
})();
`;

/** The stalls of a probe that fell within `window` (ms since the Unix epoch): how many, and the longest (0 if none). */
export function stallsWithin(stalls: readonly { at: number; ms: number }[], window: { from: number; until: number }): { n: number; longestMs: number } {
  const inside = stalls.filter((s) => s.at >= window.from && s.at <= window.until);
  return { n: inside.length, longestMs: inside.reduce((m, s) => Math.max(m, s.ms), 0) };
}

export const startHiccupProbe = (): HiccupProbe => startProbeWorker<{ at: number; ms: number }[]>(body);
