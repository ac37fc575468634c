// A credential a caller puts in a URL's query string is refused (Gavel takes none there) and is not
// left in the log either: a request line keeps the values of the query parameters its route declares
// and masks every other one (http/logged-url.ts), on routed requests, unknown paths and requests
// refused before routing alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { loggedUrl } from '../../src/http/logged-url.ts';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { exchange, lastResponse, listenOnLoopback } from '../support/raw-http.ts';
import { leaksIn } from '../support/secrets.ts';

const SECRET = 'qs-secret-Zr8pW3kN6t';

test('loggedUrl keeps declared parameters and masks the value of every other one', () => {
  const declared = new Set(['limit', 'cursor']);
  assert.equal(loggedUrl('/v1/x'), '/v1/x');
  assert.equal(loggedUrl('/v1/x?limit=5&cursor=c_1', declared), '/v1/x?limit=5&cursor=c_1');
  assert.equal(loggedUrl(`/v1/x?limit=5&api_key=${SECRET}&flag`, declared), '/v1/x?limit=5&api_key=[redacted]&flag');
  // Without a route's declaration nothing is kept; a name spelled with escapes is not the declared one.
  assert.equal(loggedUrl(`/v1/x?limit=5&token=${SECRET}`), '/v1/x?limit=[redacted]&token=[redacted]');
  assert.equal(loggedUrl(`/v1/x?%6Cimit=${SECRET}`, declared), '/v1/x?%6Cimit=[redacted]');
  assert.equal(loggedUrl('/v1/x?', declared), '/v1/x?');
  // A fragment sent on the wire (which the router read as a query) is masked as a query is.
  assert.equal(loggedUrl(`/v1/x#token=${SECRET}`, declared), '/v1/x#token=[redacted]');
  assert.equal(loggedUrl(`/v1/x#limit=5?token=${SECRET}`, declared), '/v1/x#limit=5?token=[redacted]');
});

for (const backend of backends()) {
  test(`[${backend.name}] a secret in a query string is masked in every log line, the route's own parameters are kept`, async () => {
    const texts: string[] = [];
    const stream = new Writable({ write(chunk, _enc, cb) { texts.push(String(chunk)); cb(); } });
    const svc = await startService(backend, {}, undefined, { logger: { level: 'trace', stream } as never });
    try {
      const agent = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK';
      const refused = [
        `/v1/projects/${svc.projectId}/agents/state?agent=${agent}&api_key=${SECRET}`,
        `/v1/projects/${svc.projectId}/audit?limit=5&access_token=${SECRET}`,
        `/v1/no-such-route?token=${SECRET}`,
      ];
      for (const url of refused) {
        const res = await svc.app.inject({ method: 'GET', url, headers: await svc.keyHeader(['AUDITOR']) });
        assert.ok(res.statusCode === 400 || res.statusCode === 404, `${url}: ${res.statusCode}`);
      }
      // Refused before routing (an expectation this service does not meet), on a real socket.
      const port = await listenOnLoopback(svc);
      const raw = await exchange(port, `GET /healthz?password=${SECRET} HTTP/1.1\r\nHost: x\r\nExpect: coffee\r\nConnection: close\r\n\r\n`);
      assert.equal(lastResponse(raw).status, 417);
      // …and one whose target carries a fragment, which no client sends (and the router read as a query).
      const fragment = await exchange(port, `GET /v1/projects/${svc.projectId}/audit#access_token=${SECRET} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      assert.ok(lastResponse(fragment).status >= 400);
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(leaksIn({ 'a query-string secret': SECRET }, texts), []);
      const logged = texts.join('\n');
      assert.ok(logged.includes(`agent=${agent}&api_key=[redacted]`), 'a declared parameter is kept beside the masked one');
      assert.ok(logged.includes('limit=5&access_token=[redacted]'));
      assert.ok(logged.includes('/v1/no-such-route?token=[redacted]'));
      assert.ok(logged.includes('/healthz?password=[redacted]'));
    } finally {
      await svc.stop();
    }
  });
}
