// A credential a caller puts in a URL's query string is refused (Gavel takes none there) and is not
// left in the log either: a request line keeps the values of the query parameters its route declares,
// in the form it declares, and masks every other one and every name sent alone (http/logged-url.ts),
// on routed requests, unknown paths and requests refused before routing alike; nor one put where a
// path parameter belongs (a permit in place of its commitment).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { declaredForms, loggedPath, loggedUrl } from '../../src/http/logged-url.ts';
import { PageQuery } from '../../src/http/schemas/common.ts';
import { AuditParams } from '../../src/http/schemas/audit.ts';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { exchange, lastResponse, listenOnLoopback } from '../support/raw-http.ts';
import { leaksIn } from '../support/secrets.ts';

const SECRET = 'qs-secret-Zr8pW3kN6t';

test('loggedUrl keeps declared parameters and masks the value of every other one', () => {
  const declared = new Set(['limit', 'cursor']);
  assert.equal(loggedUrl('/v1/x'), '/v1/x');
  assert.equal(loggedUrl('/v1/x?limit=5&cursor=c_1', declared), '/v1/x?limit=5&cursor=c_1');
  assert.equal(loggedUrl(`/v1/x?limit=5&api_key=${SECRET}&flag`, declared), '/v1/x?limit=5&api_key=[redacted]&[redacted]');
  // A key pasted alone after the `?` is a name without a value: masked, unless the route declares it.
  assert.equal(loggedUrl(`/v1/x?${SECRET}`, declared), '/v1/x?[redacted]');
  assert.equal(loggedUrl('/v1/x?limit&', declared), '/v1/x?limit&');
  // Without a route's declaration nothing is kept; a name spelled with escapes is not the declared one.
  assert.equal(loggedUrl(`/v1/x?limit=5&token=${SECRET}`), '/v1/x?limit=[redacted]&token=[redacted]');
  assert.equal(loggedUrl(`/v1/x?%6Cimit=${SECRET}`, declared), '/v1/x?%6Cimit=[redacted]');
  assert.equal(loggedUrl('/v1/x?', declared), '/v1/x?');
  // A fragment sent on the wire (which the router read as a query) is masked as a query is.
  assert.equal(loggedUrl(`/v1/x#token=${SECRET}`, declared), '/v1/x#token=[redacted]');
  assert.equal(loggedUrl(`/v1/x#limit=5?token=${SECRET}`, declared), '/v1/x#limit=5?token=[redacted]');
  // With the route's schema, a declared parameter keeps only a value of the form it declares.
  const forms = declaredForms(PageQuery);
  assert.equal(loggedUrl(`/v1/x?limit=5&cursor=c_1`, forms), '/v1/x?limit=5&cursor=c_1');
  assert.equal(loggedUrl(`/v1/x?limit=${SECRET}`, forms), '/v1/x?limit=[redacted]');
});

test('loggedPath masks a path parameter whose value is not of the form its route declares', () => {
  const route = '/v1/projects/:projectId/audit/:auditId/proof';
  const forms = declaredForms(AuditParams);
  const project = 'prj_01m8g7jvhd84vad7k2x2jxpqs4';
  const id = 'aud_01m8g7jxn95s9g5rkh7nr42arh';
  assert.equal(loggedPath(`/v1/projects/${project}/audit/${id}/proof`, route, forms), `/v1/projects/${project}/audit/${id}/proof`);
  assert.equal(loggedPath(`/v1/projects/${project}/audit/${SECRET}/proof`, route, forms), `/v1/projects/${project}/audit/[redacted]/proof`);
  assert.equal(loggedPath(`/v1/projects/${SECRET}/audit/%zz/proof`, route, forms), '/v1/projects/[redacted]/audit/[redacted]/proof');
  // A path that does not line up with its route is logged as the route's pattern; one of no route as sent.
  assert.equal(loggedPath(`/v1/projects/${project}/audit/${SECRET}/proof/x`, route, forms), route);
  assert.equal(loggedPath('/v1/no-such-route', undefined, undefined), '/v1/no-such-route');
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
        `/v1/projects/${svc.projectId}/sod?${SECRET}`,
        `/v1/projects/${svc.projectId}/agents/state?agent=${SECRET}`,
        `/v1/projects/${svc.projectId}/audit/${SECRET}/proof`,
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
      assert.ok(logged.includes('/sod?[redacted]'), 'a name sent alone is masked');
      assert.ok(logged.includes('/agents/state?agent=[redacted]'), 'a declared parameter not of its form is masked');
      assert.ok(logged.includes(`/v1/projects/${svc.projectId}/audit/[redacted]/proof`), 'a path parameter not of its form is masked, the rest kept');
    } finally {
      await svc.stop();
    }
  });
}
