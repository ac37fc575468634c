// A client that sends its request slowly, or stops one byte short of its body, is answered 408 and
// its connection closed once GAVEL_REQUEST_TIMEOUT_MS has passed (Fastify turns Node's request
// timeout off, and such a body held its connection and its buffered bytes for ever). A request
// refused before its body was read is answered with `connection: close`, so a body that never ends
// does not keep the connection either.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { listenOnLoopback } from '../support/raw-http.ts';

/** Opens a socket, writes `head`, then `drip` every `everyMs`; resolves with what was received once the server closes it (or `null` after `giveUpMs`). */
function hold(port: number, head: string, drip: string, everyMs: number, giveUpMs: number): Promise<{ received: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => { received += d; });
    socket.on('error', () => {});
    const timer = setInterval(() => { if (drip && socket.writable) socket.write(drip); }, everyMs);
    const giveUp = setTimeout(() => { clearInterval(timer); socket.destroy(); resolve({ received, closed: false }); }, giveUpMs);
    socket.on('close', () => { clearInterval(timer); clearTimeout(giveUp); resolve({ received, closed: true }); });
    socket.write(head);
  });
}

describe('requests that do not arrive in time', () => {
  let svc: TestService;
  let port: number;
  before(async () => {
    svc = await startService(backends()[0]!, { requestTimeoutMs: 400 });
    port = await listenOnLoopback(svc);
  });
  after(async () => { await svc.stop(); });

  const login = 'POST /v1/console/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n';
  const CASES: [string, string, string][] = [
    ['a body stalled one byte short of its content-length', `${login}Content-Length: 1000\r\n\r\n{`, ''],
    ['a body sent one byte at a time', `${login}Content-Length: 60000\r\n\r\n`, ' '],
    ['a chunked body that never ends', `${login}Transfer-Encoding: chunked\r\n\r\n`, '1\r\n \r\n'],
  ];
  for (const [label, head, drip] of CASES) {
    test(`${label}: 408 request_timeout, then the connection closes`, async () => {
      const { received, closed } = await hold(port, head, drip, 50, 3_000);
      assert.ok(closed, `the connection stayed open; received ${JSON.stringify(received)}`);
      assert.match(received, /^HTTP\/1\.1 408 /);
      assert.match(received, /"code":"request_timeout"/);
    });
  }

  test('a request refused before its body was read closes the connection instead of reading a body that never ends', async () => {
    const head = 'POST /v1/authorize HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n';
    // The timeout is long here: what closes the connection is the 415's connection: close.
    svc.app.server.requestTimeout = 0;
    try {
      const { received, closed } = await hold(port, head, `400\r\n${' '.repeat(1024)}\r\n`, 5, 1_500);
      assert.ok(closed, `the connection stayed open; received ${JSON.stringify(received.slice(0, 200))}`);
      assert.match(received, /^HTTP\/1\.1 415 /);
      assert.match(received, /\r\nconnection: close\r\n/i);
    } finally { svc.app.server.requestTimeout = 400; }
  });
});
