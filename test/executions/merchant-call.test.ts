// One merchant call, below the execution flow (src/merchants/call.ts): what the flow's tests cannot
// reach through a running merchant. A refused connection is FAILED (nothing was delivered);
// connections are kept alive between calls; a body cut off after the status line neither crashes
// the process nor changes the outcome the status decided.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callMerchant } from '../../src/merchants/call.ts';
import { parseMerchants } from '../../src/merchants/config.ts';
import { MERCHANT_SECRET } from '../support/merchant.ts';

const listen = (server: Server) => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
const close = (server: Server) => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });

function call(baseUrl: string, path: string, nonce = 'n-1') {
  const merchant = parseMerchants({ merchants: { m: { base_url: baseUrl, secret: MERCHANT_SECRET, timeout_ms: 2_000, operations: { op: { method: 'POST', path } } } } }).get('m')!;
  return callMerchant({ merchant, operation: merchant.operations.get('op')!, payload: { a: 1 }, nonce, executionId: 'exe_test', now: new Date() });
}

test('a connection refused before anything was sent is FAILED, not delivered', async () => {
  const server = createServer();
  const url = await listen(server);
  await close(server); // nothing listens on that port any more
  const outcome = await call(url, '/pay');
  assert.equal(outcome.status, 'FAILED');
  assert.equal(outcome.httpStatus, null);
  assert.match(outcome.note, /not delivered: ECONNREFUSED/);
});

test('calls to a merchant reuse a kept-alive connection', async () => {
  let connections = 0;
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(String(req.headers['idempotency-key']));
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  server.on('connection', () => { connections++; });
  const url = await listen(server);
  try {
    for (let i = 0; i < 5; i++) assert.equal((await call(url, '/pay', `n-${i}`)).status, 'SUCCEEDED');
    assert.deepEqual(seen, ['n-0', 'n-1', 'n-2', 'n-3', 'n-4']);
    assert.equal(connections, 1, 'one connection for five sequential calls');
  } finally {
    await close(server);
  }
});

test('a body cut off after the status line: the status decides, and nothing throws', async () => {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"partial":');
      setTimeout(() => res.socket?.destroy(), 20);
    });
  });
  const url = await listen(server);
  try {
    const outcome = await call(url, '/pay');
    assert.equal(outcome.status, 'SUCCEEDED');
    assert.equal(outcome.httpStatus, 200);
    await new Promise((r) => setTimeout(r, 100)); // the cut arrives after the outcome; it must be absorbed
  } finally {
    await close(server);
  }
});

test('a payload that does not serialize is FAILED with nothing sent, never left in flight', async () => {
  let requests = 0;
  const server = createServer((req, res) => { requests++; req.resume(); res.end(); });
  const url = await listen(server);
  try {
    const merchant = parseMerchants({ merchants: { m: { base_url: url, secret: MERCHANT_SECRET, timeout_ms: 2_000, operations: { op: { method: 'POST', path: '/pay' } } } } }).get('m')!;
    // Nothing a parsed body holds fails to serialize (bodies nest at most 128 levels, http/body.ts);
    // a BigInt stands in for whatever might.
    const outcome = await callMerchant({ merchant, operation: merchant.operations.get('op')!, payload: { a: 1n }, nonce: 'n-big', executionId: 'exe_test', now: new Date() });
    assert.deepEqual(outcome, { status: 'FAILED', httpStatus: null, note: 'the payload could not be serialized: nothing was sent' });
    assert.equal(requests, 0);
  } finally { await close(server); }
});
