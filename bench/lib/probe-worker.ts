// A benchmark probe: a worker thread (from source text) that measures until told to stop, then
// posts what it found and is terminated (bench/lib/disk-probe.ts, bench/lib/hiccup-probe.ts).
import { Worker } from 'node:worker_threads';

export function startProbeWorker<T>(body: string, workerData?: unknown): { stop(): Promise<T> } {
  const worker = new Worker(body, { eval: true, workerData });
  return {
    stop: () => new Promise((resolve, reject) => {
      worker.once('error', reject);
      worker.once('message', (found: T) => { void worker.terminate(); resolve(found); });
      worker.postMessage('stop');
    }),
  };
}
