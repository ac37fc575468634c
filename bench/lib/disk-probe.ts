// The disk's own flush latency while a benchmark runs: a worker thread writes 4 KiB and fdatasyncs
// a file beside the database every 10 ms, so a latency figure can be read beside what the disk did
// meanwhile. On the VMs used so far a flush now and then takes 100-500 ms (the host stalls a write),
// and every durable answer in flight waits for it: docs/performance.md, "Where the tail comes from".
import { startProbeWorker } from './probe-worker.ts';

export interface DiskProbe {
  /**
   * Stops the probe; flush latencies in ms: p50, p99, max, how many took over 20 ms, and when each
   * flush over 4 ms began (ms since the Unix epoch, for a timeline: bench/tail-episodes.ts).
   */
  stop(): Promise<{ n: number; p50: number; p99: number; max: number; over20: number; slow: { at: number; ms: number }[] }>;
}

const body = `
const { parentPort, workerData } = require('node:worker_threads');
const { openSync, writeSync, fdatasyncSync, closeSync, rmSync } = require('node:fs');
const fd = openSync(workerData.file, 'w');
const page = Buffer.alloc(4096, 7);
const lat = [];
const slow = [];
let stop = false;
parentPort.on('message', () => { stop = true; });
const tick = () => {
  if (stop) { closeSync(fd); rmSync(workerData.file, { force: true }); parentPort.postMessage({ lat, slow }); return; }
  writeSync(fd, page, 0, page.length, 0);
  const t = performance.now();
  fdatasyncSync(fd);
  const ms = performance.now() - t;
  lat.push(ms);
  if (ms > 4) slow.push({ at: performance.timeOrigin + t, ms });
  setTimeout(tick, 10);
};
tick();
`;

/** Starts probing the file system that holds `dir`. */
export function startDiskProbe(dir: string): DiskProbe {
  const probe = startProbeWorker<{ lat: number[]; slow: { at: number; ms: number }[] }>(body, { file: `${dir}/disk-probe.bin` });
  return {
    stop: async () => {
      const { lat, slow } = await probe.stop();
      lat.sort((a, b) => a - b);
      const at = (p: number) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] ?? NaN;
      return { n: lat.length, p50: at(0.5), p99: at(0.99), max: lat.at(-1) ?? NaN, over20: lat.filter((x) => x > 20).length, slow };
    },
  };
}
