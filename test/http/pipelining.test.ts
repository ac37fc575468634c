// A client that pipelines requests and never reads the answers: Node parses every request it has
// read before any answer is written, and Fastify makes a request, a reply and their answer for
// each, so 20 such connections of `GET /healthz` ran the process out of memory. A connection with
// more than MAX_PIPELINED_REQUESTS requests waiting behind an unanswered one is closed; a client
// that pipelines within the bound gets every answer, in order.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { exchange, responses, listenOnLoopback } from '../support/raw-http.ts';
import { MAX_PIPELINED_REQUESTS } from '../../src/http/message-checks.ts';

/**
 * Writes `request` over and over without reading any answer; resolves whether the server closed the
 * connection before `giveUpMs` (the client learns it when a write fails: a paused socket reads no close).
 */
function pipelineWithoutReading(port: number, request: string, giveUpMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.pause();
    socket.on('error', () => {});
    const giveUp = setTimeout(() => { socket.destroy(); resolve(false); }, giveUpMs);
    socket.on('close', () => { clearTimeout(giveUp); resolve(true); });
    const batch = request.repeat(1_000);
    const pump = () => { while (socket.writable && socket.write(batch)); };
    socket.on('drain', pump);
    pump();
  });
}

describe('pipelined requests', () => {
  let svc: TestService;
  let port: number;
  before(async () => {
    svc = await startService(backends()[0]!);
    port = await listenOnLoopback(svc);
  });
  after(async () => { await svc.stop(); });

  const healthz = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';

  test('a connection that pipelines past the bound without reading is closed, and the service still answers', async () => {
    assert.ok(await pipelineWithoutReading(port, healthz, 3_000), 'the connection stayed open');
    assert.equal((await svc.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  });

  test('a client that pipelines up to the bound gets every answer, in order', async () => {
    const close = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
    const all = responses(await exchange(port, healthz.repeat(MAX_PIPELINED_REQUESTS) + close));
    assert.equal(all.length, MAX_PIPELINED_REQUESTS + 1);
    for (const res of all) assert.equal(res.status, 200, res.body);
  });

  test('one request more than the bound waiting closes the connection before any is answered', async () => {
    const close = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
    const all = responses(await exchange(port, healthz.repeat(MAX_PIPELINED_REQUESTS + 1) + close));
    assert.ok(all.length < MAX_PIPELINED_REQUESTS + 2, `all ${all.length} requests were answered`);
  });

  test('the bound counts the requests waiting now, not all a connection has pipelined', async () => {
    // Two rounds of a full bound on one connection, the first round's answers read before the second.
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => { received += d; });
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    const answers = () => (received.match(/HTTP\/1\.1 200 /g) ?? []).length;
    const until = async (n: number) => { while (answers() < n && !socket.destroyed) await new Promise((resolve) => setTimeout(resolve, 10)); };
    socket.write(healthz.repeat(MAX_PIPELINED_REQUESTS));
    await until(MAX_PIPELINED_REQUESTS);
    socket.write(healthz.repeat(MAX_PIPELINED_REQUESTS - 1) + 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await closed;
    assert.equal(answers(), 2 * MAX_PIPELINED_REQUESTS);
  });

  test('requests that ask to continue or expect something else count toward the bound too', async () => {
    for (const expect of ['100-continue', 'something-else']) {
      const request = `GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: ${expect}\r\n\r\n`;
      assert.ok(await pipelineWithoutReading(port, request, 3_000), `Expect: ${expect}: the connection stayed open`);
    }
  });
});
