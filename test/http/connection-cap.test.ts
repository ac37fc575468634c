// Each connection may hold a body of up to the body limit, read before any authentication, for up
// to the request timeout; without a bound on connections, 4,000 clients that stalled one byte short
// of 64 KiB took the process from 180 to 460 MB resident. GAVEL_MAX_CONNECTIONS bounds them: a
// connection past it is closed unanswered, idle keep-alive connections are closed to make room for
// the next, and the refusals are logged once, not for every connection.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { listenOnLoopback } from '../support/raw-http.ts';

/** A connection and everything it received; `closed` settles when the server closes it. */
function open(port: number, request: string): { socket: Socket; received: () => string; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => { received += d; });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.write(request);
  return { socket, received: () => received, closed };
}
const answered = (c: { received: () => string }) => new Promise<void>((resolve) => {
  const check = () => { if (/\r\n\r\n\{/.test(c.received())) resolve(); else setTimeout(check, 10); };
  check();
});

const until = async (done: () => Promise<boolean>) => { while (!(await done())) await new Promise((resolve) => setTimeout(resolve, 10)); };

describe('the connection cap', () => {
  let svc: TestService;
  let port: number;
  const warnings: string[] = [];
  before(async () => {
    svc = await startService(backends()[0]!, { maxConnections: 3 });
    port = await listenOnLoopback(svc);
    const warn = svc.app.log.warn.bind(svc.app.log);
    svc.app.log.warn = ((...args: Parameters<typeof warn>) => { warnings.push(JSON.stringify(args)); warn(...args); }) as typeof warn;
  });
  after(async () => { await svc.stop(); });
  const connections = () => new Promise<number>((resolve, reject) => svc.app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));

  const stalled = 'POST /v1/authorize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{';
  const healthz = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';

  test('past the cap of connections holding bodies, a connection is closed unanswered, and logged once', async () => {
    const holding = [open(port, stalled), open(port, stalled), open(port, stalled)];
    await until(async () => (await connections()) === 3);
    const refused = [open(port, healthz), open(port, healthz)];
    await Promise.all(refused.map((c) => c.closed));
    for (const c of refused) assert.equal(c.received(), '', 'a connection past the cap was answered');
    assert.equal(warnings.filter((w) => /GAVEL_MAX_CONNECTIONS/.test(w)).length, 1, warnings.join('\n'));
    for (const c of holding) c.socket.destroy();
    await Promise.all(holding.map((c) => c.closed));
  });

  test('idle keep-alive connections make room: the next connection after a refusal is answered', async () => {
    // Kept open past any wait of this test unless closed to make room (Fastify's 72 s would close them anyway).
    svc.app.server.keepAliveTimeout = 3_600_000;
    const idle = [open(port, healthz), open(port, healthz), open(port, healthz)];
    await Promise.all(idle.map(answered));
    const refused = open(port, healthz);
    await refused.closed;
    await Promise.all(idle.map((c) => c.closed));
    const next = open(port, healthz);
    await answered(next);
    assert.match(next.received(), /^HTTP\/1\.1 200 /);
    next.socket.destroy();
  });
});
