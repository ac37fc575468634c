// Preloaded into a writer thread (`--import`, ThreadWriterOptions.execArgv) by the writer-thread
// tests: wraps the real fdatasync so each flush reports the file it flushed, on the broadcast
// channel below, before and after it runs, and holds each flush GAVEL_PROBE_FLUSH_MS long first.
// A test can then see that a flush of the WAL really ran, and that nothing answered meanwhile.
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { PROBE_CHANNEL, type ProbeMessage } from './fdatasync-probe-channel.ts';

const channel = new BroadcastChannel(PROBE_CHANNEL);
channel.unref();
const hold = Number(process.env.GAVEL_PROBE_FLUSH_MS ?? 0);
const pause = new Int32Array(new SharedArrayBuffer(4));
const real = fs.fdatasyncSync;
fs.fdatasyncSync = (fd: number): void => {
  const path = fs.readlinkSync(`/proc/self/fd/${fd}`);
  channel.postMessage({ phase: 'start', path } satisfies ProbeMessage);
  if (hold > 0) Atomics.wait(pause, 0, 0, hold);
  real(fd);
  channel.postMessage({ phase: 'end', path } satisfies ProbeMessage);
};
// The thread's modules import fdatasyncSync by name: their bindings now name the wrapper.
syncBuiltinESMExports();
