// Edges of the wire conventions (decision 0001): the body limit (http/body.ts) however the body is
// framed, a refusal that leaves a declared body unread, a 405 whose URL carries a query, and the
// router's own refusals (decision 0700).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { assertRawProblem, exchange, lastResponse, responses, listenOnLoopback } from '../support/raw-http.ts';
import { DEFAULTS } from '../../src/config/config.ts';
import { consoleMember } from '../support/console.ts';

const LIMIT = DEFAULTS.bodyLimitBytes;
/** Valid JSON of exactly `bytes` bytes. */
const bodyOf = (bytes: number) => `{"x":"${'a'.repeat(bytes - 8)}"}`;

for (const backend of backends()) {
  describe(`wire edges on ${backend.name}`, () => {
    let svc: TestService;
    let port: number;
    before(async () => {
      svc = await startService(backend);
      port = await listenOnLoopback(svc);
    });
    after(async () => { await svc.stop(); });

    // Without a key, a body that was read is 401 (authentication follows parsing); one refused for its size is 413.
    const send = (payload: string | Readable) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { 'content-type': 'application/json' }, payload });
    const chunked = (text: string) => Readable.from([text.slice(0, 1000), text.slice(1000)].map((s) => Buffer.from(s)));

    test('a body of exactly the limit is read and one byte more is 413, with a Content-Length and chunked', async () => {
      assert.equal(bodyOf(LIMIT).length, LIMIT);
      assert.equal((await send(bodyOf(LIMIT))).statusCode, 401);
      assert.equal((await send(chunked(bodyOf(LIMIT)))).statusCode, 401);
      for (const res of [await send(bodyOf(LIMIT + 1)), await send(chunked(bodyOf(LIMIT + 1)))]) {
        assert.equal(res.statusCode, 413, res.body);
        assert.equal(res.json().code, 'payload_too_large');
      }
    });

    test('a Content-Length past the limit is 413 before the body is sent, and the connection closes', async () => {
      const raw = await exchange(port, `POST /v1/authorize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`);
      assertRawProblem(lastResponse(raw), 413, 'payload_too_large');
    });

    test('a body refused before it is read (415) closes the connection rather than wait for the rest, however it is framed', async () => {
      for (const framing of ['Content-Length: 1000\r\n\r\nhello', 'Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n']) {
        const res = lastResponse(await exchange(port, `POST /v1/authorize HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n${framing}`));
        assertRawProblem(res, 415, 'unsupported_media_type');
        assert.equal(res.headers.connection, 'close', framing);
      }
    });

    test('a request with an Expect it cannot meet and a repeated Host is refused for the Host, as without the Expect', async () => {
      const res = lastResponse(await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\nExpect: something-else\r\nConnection: close\r\n\r\n'));
      assertRawProblem(res, 400, 'duplicate_header');
    });

    test('the router\'s refusals are problems: a path parameter past 2,048 characters is 414, a malformed escape 400 bad_url', async () => {
      for (const [url, status, code] of [[`/v1/projects/${'p'.repeat(2049)}/executions`, 414, 'uri_too_long'], ['/v1/projects/%E0%A4%A/executions', 400, 'bad_url']] as const) {
        const res = await svc.app.inject({ method: 'GET', url });
        assert.equal(res.statusCode, status, res.body);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        assert.equal(res.json().code, code);
        assert.equal(res.json().request_id, res.headers['x-request-id']);
      }
    });

    test('no route, or a wrong method, is 404 or 405 whatever JSON body it carries: malformed, repeated, oversized', async () => {
      for (const payload of ['{"a": ', '{"a":1,"a":2}', '{"__proto__":{}}', bodyOf(LIMIT + 1)]) {
        for (const [method, url, status, code] of [['POST', '/v1/authorise', 404, 'not_found'], ['POST', '/healthz', 405, 'method_not_allowed']] as const) {
          const res = await svc.app.inject({ method, url, headers: { 'content-type': 'application/json' }, payload });
          assert.equal(res.statusCode, status, `${method} ${url} with ${payload.slice(0, 20)}: ${res.body}`);
          assert.equal(res.json().code, code);
        }
      }
      // Its body unread, the connection is not misframed: the request after it is read as sent.
      const body = '{"a": [1, 2, 3]}';
      const raw = await exchange(port, `POST /v1/authorise HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
        + 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      const [first, second] = responses(raw);
      assertRawProblem(first!, 404, 'not_found');
      if (second) assert.equal(second.status, 200, second.body);
    });

    test('an agent DID in the path: escaped or not it names one agent, and a `%` it holds is sent as %25 (as the OpenAPI parameter says)', async () => {
      const admin = await consoleMember(svc, ['ADMIN']);
      const base = `/v1/console/projects/${svc.projectId}/agents`;
      const dids = ['did:web:a.example%3A8080', 'did:web:a.example:8080'];
      for (const did of dids) assert.equal((await svc.app.inject({ method: 'POST', url: base, headers: admin.post, payload: { did } })).statusCode, 201);
      const named = async (segment: string) => (await svc.app.inject({ method: 'GET', url: `${base}/${segment}`, headers: admin.get })).json().did;
      for (const did of dids) assert.equal(await named(encodeURIComponent(did)), did);
      assert.equal(await named('did:web:a.example:8080'), 'did:web:a.example:8080');
      assert.equal(await named('did%3aweb%3Aa.%65xample:8080'), 'did:web:a.example:8080');
      // Sent as is, the DID's own escape is decoded with the segment: it names the other agent.
      assert.equal(await named('did:web:a.example%3A8080'), 'did:web:a.example:8080');
      const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const param = doc.paths['/v1/console/projects/{projectId}/agents/{agentDid}'].get.parameters.find((p: { name: string }) => p.name === 'agentDid');
      assert.match(param.description, /%25/);
    });

    test('a wrong method is 405 with Allow whether or not the URL carries a query', async () => {
      for (const url of ['/healthz', '/healthz?x=1', '/openapi.json?a=b&c']) {
        const res = await svc.app.inject({ method: 'DELETE', url });
        assert.equal(res.statusCode, 405, `${url}: ${res.body}`);
        assert.equal(res.json().code, 'method_not_allowed');
        assert.match(String(res.headers.allow), /\bGET\b/);
      }
    });

    test('a path spelt with percent-escapes of unreserved characters, or in absolute form, is the same path: its method answers, another is 405', async () => {
      // RFC 3986 §6.2.2.2: `%73od` is `sod`; RFC 9112 §3.2.2: a server must accept `http://host/path` as a request target.
      const key = await svc.keyHeader(['AUDITOR']);
      for (const [url, headers] of [['/%68ealthz', {}], [`/v1/projects/${svc.projectId}/s%6Fd`, key], [`/v1/%70rojects/${svc.projectId}/sod?x`, key]] as const) {
        const read = await svc.app.inject({ method: 'GET', url: url.replace('?x', ''), headers });
        assert.equal(read.statusCode, 200, `GET ${url}: ${read.body}`);
        const res = await svc.app.inject({ method: 'DELETE', url, headers });
        assert.equal(res.statusCode, 405, `DELETE ${url}: ${res.body}`);
        assert.equal(res.json().code, 'method_not_allowed');
        assert.match(String(res.headers.allow), /\bGET\b/);
      }
      for (const target of ['http://x/healthz', `HTTP://x:7400/v1/projects/${svc.projectId}/sod?limit=1`]) {
        assertRawProblem(lastResponse(await exchange(port, `DELETE ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)), 405, 'method_not_allowed');
      }
      // A reserved character escaped is not the same (RFC 3986 §2.2): `%2F` does not split a segment.
      const slash = await svc.app.inject({ method: 'DELETE', url: `/v1/projects%2F${svc.projectId}/sod` });
      assert.equal(slash.statusCode, 404, slash.body);
    });
  });
}
