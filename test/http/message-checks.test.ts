// What Node answered on its own (bare, without problem+json) or passed on silently, answered before
// routing as problems (src/http/message-checks.ts): repeated Host, Authorization or Content-Type, a
// missing Host, an Expect other than 100-continue, CONNECT. Raw bytes over a real socket.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { assertRawProblem, exchange, lastResponse, responses, listenOnLoopback } from '../support/raw-http.ts';
import { issue, newAgent } from '../support/authorize.ts';
import { recordedDecisions } from '../support/decisions.ts';
import { consoleMember } from '../support/console.ts';

const HEALTH = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

describe('requests answered before routing', () => {
  let svc: TestService;
  let port: number;
  let authorization: string;
  let decisionBody: string;
  before(async () => {
    svc = await startService(backends()[0]!);
    port = await listenOnLoopback(svc);
    authorization = (await svc.keyHeader([])).authorization;
    const agent = newAgent();
    const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
    decisionBody = JSON.stringify({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' });
  });
  after(async () => { await svc.stop(); });

  const authorize = (headers: string) => `POST /v1/authorize HTTP/1.1\r\nHost: x\r\n${headers}Content-Length: ${Buffer.byteLength(decisionBody)}\r\n\r\n${decisionBody}`;

  test('one Authorization: the request over a raw socket is decided (the control for the cases below)', async () => {
    const res = lastResponse(await exchange(port, authorize(`Authorization: ${authorization}\r\nContent-Type: application/json\r\nConnection: close\r\n`)));
    assert.equal(res.status, 200, res.body);
  });

  test('a repeated Authorization is 400 duplicate_header before any authentication, and nothing is decided', async () => {
    const before = (await recordedDecisions(svc.ts.store.db)).length;
    for (const [first, second] of [[authorization, 'Bearer gvl_unknown'], ['Bearer gvl_unknown', authorization], [authorization, authorization]]) {
      const raw = await exchange(port, authorize(`Authorization: ${first}\r\ncontent-type: application/json\r\nauthorization: ${second}\r\n`));
      const res = lastResponse(raw);
      assertRawProblem(res, 400, 'duplicate_header');
      assert.match(JSON.parse(res.body).detail, /authorization/);
      // Refused before its body was read: the connection is closed rather than drained.
      assert.equal(res.headers.connection, 'close');
    }
    assert.equal((await recordedDecisions(svc.ts.store.db)).length, before);
  });

  test('a repeated Content-Type is 400 duplicate_header, not read as the first', async () => {
    const res = lastResponse(await exchange(port, authorize(`Authorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\n`)));
    assertRawProblem(res, 400, 'duplicate_header');
    assert.match(JSON.parse(res.body).detail, /content-type/);
  });

  test('a repeated Host is 400 duplicate_header (RFC 9112 §3.2); a request without a body keeps its connection', async () => {
    const raw = await exchange(port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHOST: evil.example\r\n\r\n${HEALTH}`);
    const [refused, next] = responses(raw);
    assertRawProblem(refused!, 400, 'duplicate_header');
    assert.notEqual(refused!.headers.connection, 'close');
    assert.equal(next?.status, 200);
  });

  test('an HTTP/1.1 request without Host is 400 malformed_request and the connection closes; HTTP/1.0 needs none', async () => {
    const raw = await exchange(port, `GET /healthz HTTP/1.1\r\n\r\n${HEALTH}`);
    assert.equal(responses(raw).length, 1);
    const res = lastResponse(raw);
    assertRawProblem(res, 400, 'malformed_request');
    assert.equal(res.headers.connection, 'close');
    assert.equal(lastResponse(await exchange(port, 'GET /healthz HTTP/1.0\r\n\r\n')).status, 200);
  });

  test('a request line without a version (HTTP/0.9) is 400 malformed_request, HTTP/2.0 as text 505; the connection closes', async () => {
    // Node's parser passes both to the listener; they were answered 200 as if HTTP/1.x.
    const old = responses(await exchange(port, `GET /healthz\r\n\r\n${HEALTH}`));
    assert.equal(old.length, 1);
    assertRawProblem(old[0]!, 400, 'malformed_request');
    assert.equal(old[0]!.headers.connection, 'close');
    const two = responses(await exchange(port, `GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n${HEALTH}`));
    assert.equal(two.length, 1);
    assertRawProblem(two[0]!, 505, 'http_version_not_supported');
    assert.equal(JSON.parse(two[0]!.body).title, 'HTTP Version Not Supported');
    assert.equal(two[0]!.headers.connection, 'close');
    // The body-reading route is refused the same way, before authentication.
    assertRawProblem(lastResponse(await exchange(port, 'POST /v1/authorize HTTP/2.0\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}')), 505, 'http_version_not_supported');
  });

  test('an Expect other than 100-continue is 417 expectation_failed, and the connection is kept', async () => {
    const [refused, next] = responses(await exchange(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n${HEALTH}`));
    assertRawProblem(refused!, 417, 'expectation_failed');
    assert.equal(next?.status, 200);
  });

  test('Expect: 100-continue is met, unless the request is refused before its body: then no 100 is sent', async () => {
    const met = responses(await exchange(port, authorize(`Authorization: ${authorization}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nConnection: close\r\n`)));
    assert.deepEqual(met.map((r) => r.status), [100, 200]);
    const refused = responses(await exchange(port, authorize(`Authorization: ${authorization}\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n`)));
    assert.equal(refused.length, 1);
    assertRawProblem(refused[0]!, 400, 'duplicate_header');
    assert.equal(refused[0]!.headers.connection, 'close');
  });

  test('Expect: 100-continue is not met for a body the route refuses unread (a declared length past its limit, another media type): one answer, no 100', async () => {
    // Sent 100 Continue and then 413: a client (curl past 1 MiB) began uploading what was refused.
    for (const [headers, status, code] of [
      [`Content-Type: application/json\r\nContent-Length: ${svc.deps.config.bodyLimitBytes + 1}\r\n`, 413, 'payload_too_large'],
      ['Content-Type: text/plain\r\nContent-Length: 2\r\n', 415, 'unsupported_media_type'],
    ] as const) {
      const got = responses(await exchange(port, `POST /v1/authorize HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\n${headers}Expect: 100-continue\r\n\r\n`));
      assert.deepEqual(got.map((r) => r.status), [status]);
      assertRawProblem(got[0]!, status, code);
      assert.equal(got[0]!.headers.connection, 'close');
    }
    // A body no route reads (a GET's) is never asked for, and the answer closes the connection: the
    // client sends no body after a final answer, and a kept-alive connection would read its next request as that body.
    const unread = responses(await exchange(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`));
    assert.deepEqual(unread.map((r) => [r.status, r.headers.connection]), [[200, 'close']]);
    // A body that is read is asked for, and the connection is kept as it would have been.
    const kept = responses(await exchange(port, authorize(`Authorization: ${authorization}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n`) + HEALTH));
    assert.deepEqual(kept.map((r) => r.status), [100, 200, 200]);
  });

  test('a transfer coding other than chunked alone is 501 not_implemented before any authentication, and nothing is decided', async () => {
    // Node decodes only the chunked framing: `gzip, chunked` reached the JSON parser still compressed
    // (and a body that happened to be plain JSON was decided).
    const before = (await recordedDecisions(svc.ts.store.db)).length;
    const chunked = `${Buffer.byteLength(decisionBody).toString(16)}\r\n${decisionBody}\r\n0\r\n\r\n`;
    for (const coding of ['gzip, chunked', 'identity, chunked', 'x-custom, Chunked']) {
      const res = lastResponse(await exchange(port, `POST /v1/authorize HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nTransfer-Encoding: ${coding}\r\n\r\n${chunked}`));
      assertRawProblem(res, 501, 'not_implemented');
      assert.equal(res.headers.connection, 'close');
    }
    assert.equal((await recordedDecisions(svc.ts.store.db)).length, before);
    const plain = lastResponse(await exchange(port, `POST /v1/authorize HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n${chunked}`));
    assert.equal(plain.status, 200, plain.body);
  });

  test('CONNECT is 501 not_implemented, then the connection closes', async () => {
    for (const target of ['example.com:443', '/healthz']) {
      const res = lastResponse(await exchange(port, `CONNECT ${target} HTTP/1.1\r\nHost: example.com:443\r\n\r\n`));
      assertRawProblem(res, 501, 'not_implemented');
      assert.equal(res.headers.connection, 'close');
    }
  });

  test('a problem for a request without a body (no such route) keeps the connection', async () => {
    const [first, second] = responses(await exchange(port, `GET /nothing HTTP/1.1\r\nHost: x\r\n\r\nGET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    assertRawProblem(first!, 404, 'not_found');
    assert.notEqual(first!.headers.connection, 'close');
    assertRawProblem(second!, 404, 'not_found');
  });

  test('a repeated x-csrf-token is joined by Node into a value no token matches: 403 csrf_failed', async () => {
    const person = await consoleMember(svc, []);
    const res = lastResponse(await exchange(port, 'POST /v1/console/logout HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n'
      + `Cookie: ${person.post.cookie}\r\nx-csrf-token: ${person.post['x-csrf-token']}\r\nx-csrf-token: ${person.post['x-csrf-token']}\r\n\r\n`));
    assertRawProblem(res, 403, 'csrf_failed');
  });
  test('a request target carrying a fragment is 400 bad_url, not read with the fragment as its query', async () => {
    // RFC 9112 §3.2: a request target has no fragment; clients strip it. The router read `#…` as a query.
    const state = `/v1/projects/${svc.projectId}/agents/state`;
    const agent = newAgent().did;
    const control = lastResponse(await exchange(port, `GET ${state}?agent=${agent} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nConnection: close\r\n\r\n`));
    assert.equal(control.status, 200, control.body);
    for (const target of [`${state}#agent=${agent}`, `${state}?agent=${agent}#x`, '/healthz#x', 'http://x/healthz#x']) {
      const res = lastResponse(await exchange(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nConnection: close\r\n\r\n`));
      assertRawProblem(res, 400, 'bad_url');
    }
  });
});
