// A credential a caller puts in a URL's query string is refused (Gavel takes none there) and is not
// left in the log either: a request line keeps the values of the query parameters its route declares,
// in the form it declares, and masks every other one and every name sent alone (http/logged-url.ts),
// on routed requests, unknown paths and requests refused before routing alike; nor one put where a
// path parameter belongs (a permit in place of its commitment), nor one sent as a cursor (not of a
// cursor's form), nor one in a path no route serves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { declaredForms, loggedPath, loggedUrl, unroutedPath } from '../../src/http/logged-url.ts';
import { PageQuery, ProjectParams } from '../../src/http/schemas/common.ts';
import { AuditParams } from '../../src/http/schemas/audit.ts';
import { encodeCursor, encodeKeyCursor } from '../../src/http/paging.ts';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { exchange, lastResponse, listenOnLoopback } from '../support/raw-http.ts';
import { leaksIn } from '../support/secrets.ts';

const SECRET = 'qs-secret-Zr8pW3kN6t';
/** Of an API key's form (http/auth/api-key.ts), every character one base64url also has. */
const KEY = 'gvl_Zr8pW3kN6tQ2xV9mB4cH7jL1sD5fG0aE3uY8iO6wR2n';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
/** A cursor of each kind a list issues: an id's, a composite key's (http/paging.ts), a policy version's (machine/policy.ts). */
const CURSORS = [
  encodeCursor('aud_01m8g7jxn95s9g5rkh7nr42arh'),
  encodeKeyCursor('2026-11-28T10:00:00.000Z~did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', 'agents'),
  Buffer.from(JSON.stringify({ v: 3 })).toString('base64url'),
];

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
  assert.equal(loggedUrl(`/v1/x?limit=${SECRET}`, forms), '/v1/x?limit=[redacted]');
  // A cursor is base64url of JSON, as the lists issue it: any other value of `cursor` is masked.
  for (const cursor of CURSORS) assert.equal(loggedUrl(`/v1/x?limit=5&cursor=${cursor}`, forms), `/v1/x?limit=5&cursor=${cursor}`);
  for (const value of [SECRET, KEY, JWT, 'c_1', encodeURIComponent(`${CURSORS[0]}=`)]) {
    assert.equal(loggedUrl(`/v1/x?limit=5&cursor=${value}`, forms), '/v1/x?limit=5&cursor=[redacted]', value);
  }
});

test('unroutedPath keeps what lines up with a route and the words a person types, and masks any other segment', () => {
  const routes = [
    { segments: '/v1/projects/:projectId/audit/:auditId/proof'.split('/'), params: declaredForms(AuditParams) },
    { segments: '/v1/projects/:projectId/audit'.split('/'), params: declaredForms(ProjectParams) },
    { segments: '/healthz'.split('/'), params: undefined },
  ];
  const project = 'prj_01m8g7jvhd84vad7k2x2jxpqs4';
  assert.equal(unroutedPath(`/v1/${SECRET}`, routes), '/v1/[redacted]');
  assert.equal(unroutedPath(`/${KEY}`, routes), '/[redacted]');
  // A typo stays readable where it was made; what follows it is kept only if a person types such words.
  assert.equal(unroutedPath(`/v1/projcts/${project}/audit`, routes), '/v1/projcts/[redacted]/audit');
  assert.equal(unroutedPath(`/v1/projects/${project}/audits/${KEY}`, routes), `/v1/projects/${project}/audits/[redacted]`);
  assert.equal(unroutedPath(`/v1/projects/${project}/audit/${JWT}/proof`, routes), `/v1/projects/${project}/audit/[redacted]/proof`);
  // A parameter not of its form ends what lines up (a key where the project id belongs).
  assert.equal(unroutedPath(`/v1/projects/${KEY}/audit/x`, routes), '/v1/projects/[redacted]/audit/x');
  assert.equal(unroutedPath('/favicon.ico', routes), '/favicon.ico');
  assert.equal(unroutedPath('/v1//audit/', routes), '/v1//audit/');
});

test('loggedPath masks a path parameter whose value is not of the form its route declares', () => {
  const route = '/v1/projects/:projectId/audit/:auditId/proof';
  const forms = declaredForms(AuditParams);
  const project = 'prj_01m8g7jvhd84vad7k2x2jxpqs4';
  const id = 'aud_01m8g7jxn95s9g5rkh7nr42arh';
  assert.equal(loggedPath(`/v1/projects/${project}/audit/${id}/proof`, route, forms), `/v1/projects/${project}/audit/${id}/proof`);
  assert.equal(loggedPath(`/v1/projects/${project}/audit/${SECRET}/proof`, route, forms), `/v1/projects/${project}/audit/[redacted]/proof`);
  assert.equal(loggedPath(`/v1/projects/${SECRET}/audit/%zz/proof`, route, forms), '/v1/projects/[redacted]/audit/[redacted]/proof');
  // A path that does not line up with its route is logged as the route's pattern (one of no route is unroutedPath's).
  assert.equal(loggedPath(`/v1/projects/${project}/audit/${SECRET}/proof/x`, route, forms), route);
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
        `/v1/projects/${svc.projectId}/audit?cursor=${SECRET}`,
        `/v1/${SECRET}`,
        `/v1/projcts/${svc.projectId}/audit/${SECRET}/proof`,
        `/v1/projects/${svc.projectId}/audits/${SECRET}`,
      ];
      for (const url of refused) {
        const res = await svc.app.inject({ method: 'GET', url, headers: await svc.keyHeader(['AUDITOR']) });
        assert.ok(res.statusCode === 400 || res.statusCode === 404, `${url}: ${res.statusCode}`);
      }
      // Refused before routing (an expectation this service does not meet), on a real socket.
      const port = await listenOnLoopback(svc);
      const raw = await exchange(port, `GET /healthz?password=${SECRET} HTTP/1.1\r\nHost: x\r\nExpect: coffee\r\nConnection: close\r\n\r\n`);
      assert.equal(lastResponse(raw).status, 417);
      const path = await exchange(port, `GET /v1/typo/${SECRET} HTTP/1.1\r\nHost: x\r\nExpect: coffee\r\nConnection: close\r\n\r\n`);
      assert.equal(lastResponse(path).status, 417);
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
      assert.ok(logged.includes('/v1/typo/[redacted]'), 'a path refused before routing is read as one no route serves');
      assert.ok(logged.includes('/sod?[redacted]'), 'a name sent alone is masked');
      assert.ok(logged.includes('/agents/state?agent=[redacted]'), 'a declared parameter not of its form is masked');
      assert.ok(logged.includes(`/v1/projects/${svc.projectId}/audit/[redacted]/proof`), 'a path parameter not of its form is masked, the rest kept');
      assert.ok(logged.includes(`/v1/projects/${svc.projectId}/audit?cursor=[redacted]`), 'a cursor not of a cursor\'s form is masked');
      assert.ok(logged.includes('"/v1/[redacted]"'), 'a path no route serves is masked where it names none');
      assert.ok(logged.includes('/v1/projcts/[redacted]/audit/[redacted]/proof'), 'a typo is kept, the segments after it masked unless words');
      assert.ok(logged.includes(`/v1/projects/${svc.projectId}/audits/[redacted]`), 'what lines up with a route is kept');
    } finally {
      await svc.stop();
    }
  });

  test(`[${backend.name}] every list's cursor is logged if it is of a cursor's form, and masked if not`, async () => {
    const lines: { reqId?: string; msg?: string; req?: { url?: string } }[] = [];
    const stream = new Writable({ write(chunk, _enc, cb) { for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l)); cb(); } });
    const svc = await startService(backend, {}, undefined, { logger: { level: 'info', stream } as never });
    try {
      const loggedUrlOf = (res: { headers: Record<string, unknown> }) => lines.find((l) => l.reqId === res.headers['x-request-id'] && l.msg === 'incoming request')?.req?.url;
      // An issued cursor, as a list answers it, and the same list's answer to a key sent as its cursor.
      const auditor = await svc.keyHeader(['AUDITOR']);
      const first = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/audit?limit=1`, headers: auditor });
      const issued = first.json().next_cursor as string;
      assert.equal(typeof issued, 'string');
      const next = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/audit?limit=1&cursor=${issued}`, headers: auditor });
      assert.equal(next.statusCode, 200);
      assert.equal(loggedUrlOf(next), `/v1/projects/${svc.projectId}/audit?limit=1&cursor=${issued}`);
      const refused = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/audit?cursor=${KEY}`, headers: auditor });
      assert.deepEqual([refused.statusCode, refused.json().errors[0].code], [400, 'invalid_cursor'], 'a bad cursor is refused as before');
      assert.equal(loggedUrlOf(refused), `/v1/projects/${svc.projectId}/audit?cursor=[redacted]`);
      // Every route that takes a cursor, as the OpenAPI document lists them (the request line is logged before authentication).
      const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>> };
      const listed = Object.entries(doc.paths).filter(([, ops]) => ops.get?.parameters?.some((p) => p.in === 'query' && p.name === 'cursor')).map(([path]) => path);
      assert.ok(listed.length >= 10, listed.join(' '));
      const principal = 'prn_01m8g7jvhd84vad7k2x2jxpqs4';
      for (const template of listed) {
        const path = template.replace('{projectId}', svc.projectId).replace('{principalId}', principal);
        assert.doesNotMatch(path, /[{}]/, template);
        for (const cursor of [...CURSORS, issued]) {
          assert.equal(loggedUrlOf(await svc.app.inject({ method: 'GET', url: `${path}?cursor=${cursor}` })), `${path}?cursor=${cursor}`, template);
        }
        for (const value of [SECRET, KEY, JWT]) {
          assert.equal(loggedUrlOf(await svc.app.inject({ method: 'GET', url: `${path}?cursor=${value}` })), `${path}?cursor=[redacted]`, `${template} ${value}`);
        }
      }
      assert.deepEqual(leaksIn({ 'a key sent as a cursor': KEY, 'a token sent as a cursor': JWT }, lines.map((l) => JSON.stringify(l))), []);
    } finally {
      await svc.stop();
    }
  });
}
