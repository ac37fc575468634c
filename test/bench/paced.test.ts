// The benchmark's open loop with a lead-in (bench/lib/paced.ts, decision 0009): requests due during
// the lead-in are sent at the same rate but counted apart, and only the rest are measured.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pacedLoad, pacedLoadFresh } from '../../bench/lib/paced.ts';

/** A server on loopback whose first `late` answers come 30 ms late; it counts requests and their source ports. */
async function lateServer(late: number) {
  let seen = 0;
  const peers = new Set<number>();
  const server = createServer((req, res) => {
    peers.add(req.socket.remotePort!);
    const slow = seen++ < late;
    req.resume();
    req.on('end', () => setTimeout(() => res.end('ok'), slow ? 30 : 0));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen: () => seen, peers, close: () => server.close() };
}

test('a lead-in runs at the rate but is not measured; its own p99 is reported apart', async () => {
  // The first 40 requests are answered 30 ms late: all of them are due in the lead-in.
  const server = await lateServer(40);
  const { url } = server;
  try {
    const dues: number[] = [];
    const before = performance.now();
    const r = await pacedLoad({ url, method: 'GET', rate: 100, leadIn: 1, duration: 1, connections: 8, onResponse: (due) => dues.push(due) });
    assert.equal(server.seen(), 200, 'lead-in and measured requests were all sent');
    assert.equal(dues.length, 100, 'only the measured second is heard');
    assert.equal(r.rps, 100);
    const boundary = Math.min(...dues);
    assert.ok(boundary - before >= 1000, 'every measured request was due after the lead-in');
    assert.ok(r.leadInP99 >= 30, `the late answers are in the lead-in's p99 (${r.leadInP99} ms)`);
    assert.equal(r.errors, 0);
  } finally { server.close(); }
});

test('without a lead-in every request is measured', async () => {
  const server = await lateServer(0);
  const { url } = server;
  try {
    let heard = 0;
    const r = await pacedLoad({ url, method: 'GET', rate: 200, duration: 0.5, connections: 4, onResponse: () => { heard++; } });
    assert.equal(heard, 100);
    assert.ok(Number.isNaN(r.leadInP99));
  } finally { server.close(); }
});

test('pacedLoadFresh returns the figures of a loop run in another process, lead-in apart', async () => {
  const server = await lateServer(20);
  const { url } = server;
  try {
    const r = await pacedLoadFresh({ url, method: 'POST', body: '{}', rate: 100, leadIn: 0.5, duration: 1, connections: 4 });
    assert.equal(server.seen(), 150, 'lead-in and measured requests were all sent');
    assert.equal(r.rps, 100);
    assert.equal(r.errors, 0);
    assert.ok(r.leadInP99 >= 30, `the late answers are in the lead-in's p99 (${r.leadInP99} ms)`);
    assert.ok(r.p99 < 30, 'and not in the measured one');
    assert.equal(server.peers.size, 4, 'the connections asked for');
    const none = await pacedLoadFresh({ url, method: 'GET', rate: 100, duration: 0.2, connections: 1 });
    assert.ok(Number.isNaN(none.leadInP99), 'no lead-in: NaN, as pacedLoad says it (JSON carries it as null)');
  } finally { server.close(); }
});

test('pacedLoadFresh fails when its process fails (nothing listening)', async () => {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  await assert.rejects(pacedLoadFresh({ url: `http://127.0.0.1:${port}/`, method: 'GET', rate: 10, duration: 0.1, connections: 1 }));
});
