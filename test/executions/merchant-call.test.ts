// One merchant call, below the execution flow (src/merchants/call.ts): what the flow's tests cannot
// reach through a running merchant. A failure before the connection (for https, its handshake) was
// established is FAILED (nothing was delivered), one after it UNKNOWN;
// connections are kept alive between calls; a body cut off after the status line neither crashes
// the process nor changes the outcome the status decided, and one without end, or stalled, is not
// read or held past a bound.
import { test } from 'node:test';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { callMerchant } from '../../src/merchants/call.ts';
import { parseMerchants } from '../../src/merchants/config.ts';
import { MERCHANT_SECRET } from '../support/merchant.ts';
import { verifySignature } from '../../src/merchants/signature.ts';
import { SELF_SIGNED } from '../support/tls.ts';

const execFileAsync = promisify(execFile);
const listen = (server: Server) => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
const close = (server: Server) => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
/** Waits for `event`, failing with `why()` if it has not happened within `ms`. */
async function within(event: Promise<void>, ms: number, why: () => string) {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(why())), ms); });
  try { await Promise.race([event, late]); } finally { clearTimeout(timer); }
}

// Room for a call meant to succeed on a stalled machine; a test whose subject is the timeout sets a short one.
function call(baseUrl: string, path: string, nonce = 'n-1', { method = 'POST', timeoutMs = 10_000 } = {}) {
  const merchant = parseMerchants({ merchants: { m: { base_url: baseUrl, secret: MERCHANT_SECRET, timeout_ms: timeoutMs, operations: { op: { method, path } } } } }).get('m')!;
  return callMerchant({ merchant, operation: merchant.operations.get('op')!, payload: { a: 1 }, nonce, executionId: 'exe_test', now: new Date() });
}

test('a connection refused before anything was sent is FAILED, not delivered', async () => {
  // Port 1, where nothing listens: not a port just freed, which another test file's server could take.
  const outcome = await call('http://127.0.0.1:1', '/pay');
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

test('the request a merchant receives: the operation\'s method and path, a JSON body, the nonce as Idempotency-Key, the execution id, signed now', async () => {
  let seen: { method?: string; url?: string; headers: Record<string, unknown>; body: string } | undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      res.writeHead(201).end();
    });
  });
  const url = await listen(server);
  try {
    const outcome = await call(`${url}/api`, '/orders', 'order-17', { method: 'PUT' });
    assert.deepEqual(outcome, { status: 'SUCCEEDED', httpStatus: 201, note: 'merchant answered 201' });
    assert.ok(seen);
    assert.equal(seen.method, 'PUT');
    assert.equal(seen.url, '/api/orders');
    assert.equal(seen.body, '{"a":1}');
    assert.equal(seen.headers['content-type'], 'application/json');
    assert.equal(seen.headers['content-length'], '7');
    assert.equal(seen.headers['idempotency-key'], 'order-17');
    assert.equal(seen.headers['gavel-execution-id'], 'exe_test');
    const signature = String(seen.headers['gavel-signature']);
    assert.ok(verifySignature(MERCHANT_SECRET, { method: 'PUT', path: '/api/orders', idempotencyKey: 'order-17', executionId: 'exe_test', body: seen.body }, signature));
    // A merchant rejects old timestamps (docs/executions.md): the signature is made at the call.
    const t = Number(/^t=(\d+),/.exec(signature)![1]);
    assert.ok(Math.abs(t - Date.now() / 1000) < 60, signature);
  } finally { await close(server); }
});

test('the signature is made at the time the call is given (the service clock), not read from the host', async () => {
  let signature = '';
  const server = createServer((req, res) => { signature = String(req.headers['gavel-signature']); req.resume(); req.on('end', () => res.end()); });
  const url = await listen(server);
  try {
    const merchant = parseMerchants({ merchants: { m: { base_url: url, secret: MERCHANT_SECRET, operations: { op: { method: 'POST', path: '/pay' } } } } }).get('m')!;
    const now = new Date('2030-01-01T00:00:00.900Z');
    await callMerchant({ merchant, operation: merchant.operations.get('op')!, payload: {}, nonce: 'n-clock', executionId: 'exe_test', now });
    assert.match(signature, /^t=1893456000,v1=/);
  } finally { await close(server); }
});

test('a request Node refuses to build (a header it cannot send) is FAILED: nothing left', async () => {
  let requests = 0;
  const server = createServer((req, res) => { requests++; req.resume(); res.end(); });
  const url = await listen(server);
  try {
    const outcome = await call(url, '/pay', 'n-\nsplit');
    assert.equal(outcome.status, 'FAILED');
    assert.match(outcome.note, /^not delivered: ERR_INVALID_CHAR$/);
    assert.equal(requests, 0);
  } finally { await close(server); }
});

test('classification at every boundary: 2xx SUCCEEDED, 3xx UNKNOWN, 4xx FAILED (the merchant refused), 5xx UNKNOWN', async () => {
  const server = createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(Number(req.url!.slice(1))).end()); });
  const url = await listen(server);
  try {
    const want: [number, string][] = [[200, 'SUCCEEDED'], [299, 'SUCCEEDED'], [300, 'UNKNOWN'], [399, 'UNKNOWN'], [400, 'FAILED'], [409, 'FAILED'], [499, 'FAILED'], [500, 'UNKNOWN'], [503, 'UNKNOWN'], [599, 'UNKNOWN']];
    for (const [code, status] of want) {
      const outcome = await call(url, `/${code}`, `n-${code}`);
      assert.deepEqual([outcome.status, outcome.httpStatus], [status, code], String(code));
      // The note says why an UNKNOWN is one: a 5xx may have acted, a 3xx was not followed.
      if (status === 'UNKNOWN') assert.match(outcome.note, code >= 500 ? /: it may or may not have acted$/ : /\(not followed\)/, String(code));
    }
  } finally { await close(server); }
});

test('a merchant silent past its timeout: UNKNOWN at the timeout, and the request is abandoned', async () => {
  let abandoned!: () => void;
  const closed = new Promise<void>((resolve) => { abandoned = resolve; });
  const server = createServer((req) => { req.resume(); req.socket.on('close', () => abandoned()); });
  const url = await listen(server);
  try {
    const t0 = performance.now();
    const outcome = await call(url, '/pay', 'n-slow', { timeoutMs: 300 });
    const took = performance.now() - t0;
    assert.equal(outcome.status, 'UNKNOWN');
    assert.match(outcome.note, /no answer within 300 ms/);
    assert.ok(took >= 290 && took < 2_500, `answered after ${Math.round(took)} ms`);
    // The connection is closed, not left waiting on the merchant.
    await within(closed, 2_000, () => 'the connection was still open 2 s after the timeout');
  } finally { await close(server); }
});

test('a merchant silent past its timeout is given up at timeout_ms, not later (the clock mocked)', async (t) => {
  let arrived!: () => void;
  const reached = new Promise<void>((resolve) => { arrived = resolve; });
  const server = createServer((req) => { req.resume(); arrived(); });
  const url = await listen(server);
  try {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let settled: Awaited<ReturnType<typeof call>> | undefined;
    const outcome = () => settled; // a function: TypeScript would narrow the variable to undefined
    const pending = call(url, '/pay', 'n-mocked', { timeoutMs: 1_000 }).then((o) => { settled = o; });
    await reached;
    t.mock.timers.tick(999);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(outcome(), undefined, 'still waiting 1 ms before the timeout');
    t.mock.timers.tick(1);
    await new Promise((resolve) => setImmediate(resolve));
    const given = outcome();
    assert.ok(given, 'given up at the timeout');
    await pending;
    assert.deepEqual([given.status, given.note], ['UNKNOWN', 'no answer within 1000 ms: the merchant may or may not have acted']);
  } finally { t.mock.timers.reset(); await close(server); }
});

test('a merchant whose name does not resolve is FAILED: nothing was delivered', async () => {
  // .invalid never resolves (RFC 6761); offline, the lookup fails with EAI_AGAIN instead of ENOTFOUND.
  const outcome = await call('http://merchant.invalid', '/pay');
  assert.equal(outcome.status, 'FAILED');
  assert.equal(outcome.httpStatus, null);
  assert.match(outcome.note, /^not delivered: (ENOTFOUND|EAI_AGAIN)$/);
});


test('an https merchant is called over TLS, and a certificate that does not verify is refused: FAILED, nothing reached it', async () => {
  let connections = 0;
  let requests = 0;
  const server = createTlsServer(SELF_SIGNED, (req, res) => { requests++; req.resume(); res.end(); });
  server.on('connection', () => { connections++; });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  try {
    const outcome = await call(`https://127.0.0.1:${(server.address() as AddressInfo).port}`, '/pay');
    assert.equal(outcome.status, 'FAILED', 'the handshake failed before any byte of the request left');
    assert.equal(outcome.httpStatus, null);
    assert.match(outcome.note, /^not delivered: DEPTH_ZERO_SELF_SIGNED_CERT$/);
    assert.equal(connections, 1, 'a TLS connection was opened');
    assert.equal(requests, 0, 'no request went to a merchant whose certificate did not verify');
  } finally { await close(server as unknown as Server); }
});

test('a TLS handshake that never finishes within the timeout is FAILED: the request never left', async () => {
  // A TCP peer that reads the ClientHello and never answers it.
  const received: Buffer[] = [];
  const peer = createNetServer((socket) => { socket.on('data', (chunk) => received.push(chunk)); });
  await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', () => resolve()));
  try {
    const outcome = await call(`https://127.0.0.1:${(peer.address() as AddressInfo).port}`, '/pay', 'n-hs', { timeoutMs: 300 });
    assert.equal(outcome.status, 'FAILED');
    assert.match(outcome.note, /^not delivered: no connection within 300 ms$/);
    assert.ok(received.length > 0, 'the handshake began');
    assert.ok(!Buffer.concat(received).includes('n-hs'), 'no byte of the request reached the peer');
  } finally { await new Promise<void>((resolve) => peer.close(() => resolve())); }
});

test('a connection reset after the request was sent is UNKNOWN, on a fresh and on a kept-alive connection', async () => {
  let calls = 0;
  const server = createServer((req, res) => {
    calls++;
    req.resume();
    // The first call is answered (its connection is kept alive); every later one is cut unanswered.
    req.on('end', () => { if (calls === 1) res.end('{}'); else req.socket.destroy(); });
  });
  const url = await listen(server);
  try {
    assert.equal((await call(url, '/pay', 'n-first')).status, 'SUCCEEDED');
    const reused = await call(url, '/pay', 'n-reused');
    assert.equal(reused.status, 'UNKNOWN', 'the merchant read the request on the kept-alive connection before cutting it');
    assert.match(reused.note, /may have been sent/);
    const fresh = await call(url, '/pay', 'n-fresh');
    assert.equal(fresh.status, 'UNKNOWN', 'the merchant read the request on a new connection before cutting it');
    assert.equal(calls, 3);
  } finally { await close(server); }
});

test('over TLS the request leaves once the handshake has finished: a reset then is UNKNOWN, a 200 SUCCEEDED', async () => {
  // Node reads its trusted CAs once, at start: a child process trusts the test's certificate.
  const dir = mkdtempSync(join(tmpdir(), 'gavel-tls-'));
  try {
    writeFileSync(join(dir, 'ca.pem'), SELF_SIGNED.cert);
    writeFileSync(join(dir, 'key.json'), JSON.stringify(SELF_SIGNED));
    const script = `
      import { createServer } from 'node:https';
      import { readFileSync } from 'node:fs';
      import { callMerchant } from ${JSON.stringify(new URL('../../src/merchants/call.ts', import.meta.url).href)};
      import { parseMerchants } from ${JSON.stringify(new URL('../../src/merchants/config.ts', import.meta.url).href)};
      let calls = 0;
      const server = createServer(JSON.parse(readFileSync(${JSON.stringify(join(dir, 'key.json'))}, 'utf8')), (req, res) => {
        calls++;
        req.resume();
        req.on('end', () => { if (calls === 1) res.end('{}'); else req.socket.destroy(); });
      });
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const merchant = parseMerchants({ merchants: { m: { base_url: 'https://127.0.0.1:' + server.address().port, secret: ${JSON.stringify(MERCHANT_SECRET)}, timeout_ms: 10000, operations: { op: { method: 'POST', path: '/pay' } } } } }).get('m');
      const call = (nonce) => callMerchant({ merchant, operation: merchant.operations.get('op'), payload: { a: 1 }, nonce, executionId: 'exe_test', now: new Date() });
      const ok = await call('n-ok');
      const cut = await call('n-cut');
      server.closeAllConnections(); server.close();
      console.log(JSON.stringify({ ok, cut, calls }));`;
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') } });
    const { ok, cut, calls } = JSON.parse(stdout.trim().split('\n').at(-1)!) as { ok: { status: string }; cut: { status: string; note: string }; calls: number };
    assert.equal(ok.status, 'SUCCEEDED', 'the certificate is trusted in the child');
    assert.equal(cut.status, 'UNKNOWN', 'the merchant read the request before cutting the connection');
    assert.match(cut.note, /may have been sent/);
    assert.equal(calls, 2);
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

// A hostile merchant's body after a decided status: the socket is not held, nor the body read, without end.
test('a body that never ends after a 2xx: SUCCEEDED, and the connection is closed rather than read forever', async () => {
  let sent = 0;
  let closed!: () => void;
  const gone = new Promise<void>((resolve) => { closed = resolve; });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' }); // chunked, without end
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => { while (!res.destroyed) { sent += chunk.length; if (!res.write(chunk)) { res.once('drain', pump); return; } } };
      pump();
      res.socket!.on('close', () => closed());
    });
  });
  const url = await listen(server);
  try {
    const outcome = await call(url, '/pay', 'n-endless', { timeoutMs: 60_000 });
    assert.deepEqual([outcome.status, outcome.httpStatus], ['SUCCEEDED', 200]);
    await within(gone, 3_000, () => `still reading after ${sent} bytes`);
    assert.ok(sent < 16 * 2 ** 20, `${sent} bytes were read`);
  } finally { await close(server); }
});

test('headers then a stall: the status decides, and the connection is closed at the timeout, not held', async () => {
  let closed!: () => void;
  const gone = new Promise<void>((resolve) => { closed = resolve; });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"a"');
      res.socket!.on('close', () => closed());
    });
  });
  const url = await listen(server);
  try {
    const outcome = await call(url, '/pay', 'n-stall', { timeoutMs: 300 });
    assert.deepEqual([outcome.status, outcome.httpStatus], ['SUCCEEDED', 200]);
    await within(gone, 2_000, () => 'the connection was still open 2 s after the timeout');
  } finally { await close(server); }
});

test('informational answers (100, 102, 103) then 200: SUCCEEDED', async () => {
  const server = createNetServer((socket) => {
    socket.once('data', () => socket.end('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n'
      + 'HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 9\r\nconnection: close\r\n\r\n{not json'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  try {
    const outcome = await call(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, '/pay', 'n-info');
    assert.deepEqual([outcome.status, outcome.httpStatus], ['SUCCEEDED', 200]);
  } finally { await new Promise((resolve) => server.close(resolve)); }
});

test('101 Switching Protocols to a plain call: UNKNOWN at once (the merchant may have acted), not at the timeout', async () => {
  // Node's client has no answer for an upgrade it did not ask for: without an 'upgrade' listener it
  // destroys the socket and reports nothing, so the call waited out its whole timeout.
  const server = createNetServer((socket) => {
    socket.once('data', () => socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n'));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  try {
    const outcome = call(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, '/pay', 'n-101', { timeoutMs: 60_000 });
    await within(outcome.then(() => {}), 10_000, () => 'the call was still waiting 10 s after the 101');
    assert.deepEqual([(await outcome).status, (await outcome).httpStatus], ['UNKNOWN', 101]);
  } finally { await new Promise((resolve) => server.close(resolve)); }
});

test('a connection closed after the request with no answer and no error: UNKNOWN at once, not at the timeout', async () => {
  // A merchant that closes cleanly (FIN) once it has the request: Node reports "socket hang up".
  const server = createNetServer((socket) => { socket.once('data', () => socket.end()); socket.on('error', () => {}); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  try {
    const outcome = call(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, '/pay', 'n-fin', { timeoutMs: 60_000 });
    await within(outcome.then(() => {}), 10_000, () => 'the call was still waiting 10 s after the close');
    assert.equal((await outcome).status, 'UNKNOWN');
  } finally { await new Promise((resolve) => server.close(resolve)); }
});

test('a call begun once shutdown has given calls up is not sent: FAILED, and nothing reaches the merchant', async () => {
  let requests = 0;
  const server = createServer((req, res) => { requests++; req.resume(); res.end(); });
  const base = await listen(server);
  try {
    const merchant = parseMerchants({ merchants: { m: { base_url: base, secret: MERCHANT_SECRET, timeout_ms: 2_000, operations: { op: { method: 'POST', path: '/pay' } } } } }).get('m')!;
    const stopping = new AbortController();
    stopping.abort();
    const outcome = await callMerchant({ merchant, operation: merchant.operations.get('op')!, payload: { a: 1 }, nonce: 'n-late', executionId: 'exe_test', now: new Date(), abandon: stopping.signal });
    assert.deepEqual([outcome.status, outcome.httpStatus], ['FAILED', null]);
    assert.match(outcome.note, /^not delivered: the service was shutting down/);
    assert.equal(requests, 0);
  } finally { await close(server); }
});
