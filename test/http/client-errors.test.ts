// Requests that are not well-formed HTTP, refused by Node's parser before Fastify sees them
// (src/http/client-errors.ts): a problem+json answer over a real socket, then the socket closed.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { assertRawProblem, exchange, lastResponse, listenOnLoopback } from '../support/raw-http.ts';
import { clientErrorHandler } from '../../src/http/client-errors.ts';

describe('requests that are not well-formed HTTP', () => {
  let svc: TestService;
  let port: number;
  before(async () => {
    svc = await startService(backends()[0]!);
    port = await listenOnLoopback(svc);
  });
  after(async () => { await svc.stop(); });

  const BAD: [string, string, number, string][] = [
    ['a Content-Length that is not a number', 'POST /v1/authorize HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'malformed_request'],
    ['both Content-Length and Transfer-Encoding', 'POST /v1/authorize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n', 400, 'malformed_request'],
    // Node's `headers` would keep the first of the two; its parser refuses them before that.
    ['a repeated Content-Length, even an equal one', 'POST /v1/authorize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}', 400, 'malformed_request'],
    ['a header folded onto a second line (obs-fold)', 'GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\n gvl_x\r\n\r\n', 400, 'malformed_request'],
    ['a header line without a colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n', 400, 'malformed_request'],
    // RFC 9112 §2.2: a bare CR may be refused; a value holding it would read as two lines to a
    // peer that ends lines on CR. NUL and other controls are not field-value characters (RFC 9110 §5.5).
    ['a bare CR inside a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n', 400, 'malformed_request'],
    ['a bare CR ending a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\r\n\r\n', 400, 'malformed_request'],
    ['a NUL inside a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n', 400, 'malformed_request'],
    ['a control character inside the Authorization value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer gvl_\u0001x\r\n\r\n', 400, 'malformed_request'],
    ['headers larger than the limit', `GET /healthz HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
  ];
  for (const [label, request, status, code] of BAD) {
    test(`${label}: ${status} ${code} as problem+json, then the connection closes`, async () => {
      const raw = await exchange(port, request);
      const res = lastResponse(raw);
      assertRawProblem(res, status, code);
      assert.equal(res.headers.connection, 'close');
      // Framed by its content-length: nothing follows the body.
      assert.ok(raw.endsWith(res.body));
    });
  }

  test('a bad request after a good one on the same connection: the first answer is whole, then the problem', async () => {
    const raw = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nPOST /v1/authorize HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 200 [^]*\{"status":"ok"\}HTTP\/1\.1 400 /);
    assert.equal(JSON.parse(lastResponse(raw).body).code, 'malformed_request');
  });

  test('a chunked body that cannot be framed is answered at once, not after its own response', async () => {
    const res = lastResponse(await exchange(port, 'POST /v1/authorize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'));
    assert.equal(res.status, 400);
    assert.equal(JSON.parse(res.body).code, 'malformed_request');
  });

  test('nothing is written to a reset or destroyed socket, nor inside or before another response', () => {
    const writes: string[] = [];
    let destroyed = 0;
    const fake = (props: Record<string, unknown>) => ({
      destroyed: false, writable: true, write: (s: string) => { writes.push(s); return true; }, destroy: () => { destroyed++; }, ...props,
    }) as unknown as Socket;
    const handle = (code: string, socket: Socket) => clientErrorHandler.call(svc.app, Object.assign(new Error(code), { code }), socket);
    handle('ECONNRESET', fake({}));
    handle('HPE_INVALID_METHOD', fake({ destroyed: true, writable: false }));
    assert.equal(destroyed, 0);
    handle('HPE_INVALID_CONSTANT', fake({ writable: false }));
    // The bad request's own response has begun: it cannot be answered, only closed.
    handle('HPE_INVALID_CHUNK_SIZE', fake({ _httpMessage: { _headerSent: true, req: { complete: false } } }));
    assert.deepEqual(writes, []);
    assert.equal(destroyed, 2);
    // A whole request before the bad one is still being answered: its response comes first.
    const earlier = Object.assign(new EventEmitter(), { _headerSent: false, req: { complete: true } });
    const socket = fake({ _httpMessage: earlier });
    handle('HPE_INVALID_CONSTANT', socket);
    handle('HPE_INVALID_CONSTANT', socket);
    assert.deepEqual(writes, []);
    (socket as unknown as { _httpMessage: null })._httpMessage = null;
    earlier.emit('finish');
    assert.equal(writes.length, 1);
    assert.match(writes[0]!, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.equal(destroyed, 3);
  });
});
