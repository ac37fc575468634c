// An open-loop load at a constant rate (the wrk2 method), for latency at a given throughput.
// Request i is due at start + i/rate whatever happened before it; it leaves on the first free
// keep-alive connection, and its latency counts from when it was due, so time spent queued behind
// a slow response (coordinated omission) is counted, not hidden. autocannon's `overallRate` is not
// used for this: it lets each connection send its per-second quota back to back and then idle
// (httpClient.js: reqsMadeThisSecond, reset by a 1 s interval), so "half of the maximum" runs at
// the maximum for half of each second; and its correction then adds synthetic samples as if
// requests had been spaced 1 ms apart on each connection.
import { execFile } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { createHistogram } from 'node:perf_hooks';
import type { Load } from './harness.ts';

interface Conn { socket: Socket; busy: boolean; due: number; buf: Buffer }

export interface PacedOptions {
  url: string; method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; rate: number; duration: number; leadIn?: number; connections?: number;
  /** Also report the p99 of each consecutive part of the measured window this long (seconds): a diagnostic. */
  partSeconds?: number;
}
/**
 * `window`: when the measured part ran, in milliseconds since the Unix epoch (from the end of the
 * lead-in to the last answer), so what other probes saw meanwhile can be matched to it.
 */
export type PacedResult = Load & { sendLagP99: number; leadInP99: number; window: { from: number; until: number }; partP99s: number[] };

/**
 * `leadIn` (seconds, default 0): the loop runs that long at the same rate before the measured
 * `duration`, on the same connections, so that what is measured is the server settled at this rate,
 * not its transition from whatever ran before (decision 0009, session 15). The lead-in's own p99 is
 * returned beside the measured one; `onResponse` hears only measured requests.
 */
export async function pacedLoad(opts: PacedOptions & { onResponse?: (due: number, latencyMs: number) => void }): Promise<PacedResult> {
  const u = new URL(opts.url);
  const body = Buffer.from(opts.body ?? '');
  const head = [`${opts.method} ${u.pathname}${u.search} HTTP/1.1`, `host: ${u.host}`, 'connection: keep-alive',
    ...Object.entries(opts.headers ?? {}).map(([k, v]) => `${k}: ${v}`), ...(body.length ? [`content-length: ${body.length}`] : []), '', ''].join('\r\n');
  const request = Buffer.concat([Buffer.from(head), body]);
  const histogram = createHistogram();
  const leadHistogram = createHistogram();
  const leadIn = (opts.leadIn ?? 0) * 1000;
  // Each part's histogram, by when its requests were due (partSeconds); none without parts.
  const partMs = (opts.partSeconds ?? 0) * 1000;
  const parts: ReturnType<typeof createHistogram>[] = [];
  const lastPart = Math.max(0, Math.ceil((opts.duration * 1000) / partMs) - 1);
  let measuredFrom = Infinity; // set when the loop starts
  // How late the generator itself sent requests it had a free connection for: on a 2-vCPU machine it
  // shares the CPUs with the server, and its own lateness is counted in the latencies above.
  const sendLag = createHistogram();
  let non2xx = 0;
  let errors = 0;
  let completed = 0;
  let measured = 0;
  const queue: number[] = []; // due times (ms, performance.now) of requests waiting for a connection
  const conns: Conn[] = [];

  const send = (c: Conn, due: number) => { c.busy = true; c.due = due; c.socket.write(request); };
  const onData = (c: Conn, chunk: Buffer) => {
    c.buf = c.buf.length ? Buffer.concat([c.buf, chunk]) : chunk;
    for (;;) {
      const end = c.buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const header = c.buf.subarray(0, end).toString('latin1');
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(header)?.[1];
      if (length === undefined) throw new Error('pacedLoad reads responses with a content-length only');
      if (c.buf.length < end + 4 + Number(length)) return;
      c.buf = c.buf.subarray(end + 4 + Number(length));
      const status = Number(header.slice(9, 12));
      if (status < 200 || status >= 300) non2xx++;
      const latency = performance.now() - c.due;
      if (c.due < measuredFrom) leadHistogram.record(Math.max(1, Math.round(latency * 1000)));
      else {
        const us = Math.max(1, Math.round(latency * 1000));
        histogram.record(us);
        if (partMs > 0) (parts[Math.min(Math.floor((c.due - measuredFrom) / partMs), lastPart)] ??= createHistogram()).record(us);
        opts.onResponse?.(c.due, latency);
        measured++;
      }
      completed++;
      c.busy = false;
      const next = queue.shift();
      if (next !== undefined) send(c, next);
    }
  };
  for (let i = 0; i < (opts.connections ?? 20); i++) {
    const socket = connect({ host: u.hostname, port: Number(u.port), noDelay: true });
    const c: Conn = { socket, busy: false, due: 0, buf: Buffer.alloc(0) };
    socket.on('data', (chunk: Buffer) => onData(c, chunk));
    socket.on('error', () => { errors++; });
    await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
    conns.push(c);
  }

  const start = performance.now();
  measuredFrom = start + leadIn;
  const total = Math.floor(opts.rate * (opts.duration + leadIn / 1000));
  let issued = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - start) / 1000) * opts.rate) + 1);
      for (; issued < due; issued++) {
        const at = start + (issued * 1000) / opts.rate;
        const free = conns.find((c) => !c.busy);
        if (free) { sendLag.record(Math.max(1, Math.round((now - at) * 1000))); send(free, at); } else queue.push(at);
      }
      if (issued >= total && completed >= total) { resolve(); return; }
      if (now - start > leadIn + opts.duration * 1000 + 10_000) { errors += total - completed; resolve(); return; }
      setTimeout(tick, 1);
    };
    tick();
  });
  for (const c of conns) c.socket.destroy();
  const ms = (p: number) => histogram.percentile(p) / 1000;
  const window = { from: performance.timeOrigin + measuredFrom, until: performance.timeOrigin + performance.now() };
  return { rps: measured / opts.duration, p50: ms(50), p99: ms(99), errors, non2xx, sendLagP99: sendLag.percentile(99) / 1000, leadInP99: leadIn > 0 ? leadHistogram.percentile(99) / 1000 : NaN, window,
    partP99s: Array.from(parts, (h) => (h ? h.percentile(99) / 1000 : NaN)) };
}

/**
 * pacedLoad in a fresh process (bench/lib/paced-child.ts), so that the generator's heap is its own
 * and small: a process that ran the throughput sweeps first pauses for its garbage while it paces.
 */
export function pacedLoadFresh(opts: PacedOptions): Promise<PacedResult> {
  const script = new URL('./paced-child.ts', import.meta.url).pathname;
  // Only the loop's own options cross (a caller's request may carry others, such as serverPid).
  const { url, method, headers, body, rate, duration, leadIn, connections, partSeconds } = opts;
  const options: PacedOptions = { url, method, headers, body, rate, duration, leadIn, connections, partSeconds };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...process.execArgv, script, JSON.stringify(options)], { maxBuffer: 1 << 20 }, (error, stdout) => {
      if (error) { reject(error); return; }
      // JSON has no NaN: a run without a lead-in reports its lead-in p99 as null.
      const result = JSON.parse(stdout) as PacedResult & { leadInP99: number | null; partP99s: (number | null)[] };
      resolve({ ...result, leadInP99: result.leadInP99 ?? NaN, partP99s: result.partP99s.map((p) => p ?? NaN) });
    });
  });
}
