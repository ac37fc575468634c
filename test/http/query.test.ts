// A route of the API that takes no query parameters refuses any, as the list routes refuse the ones
// they do not know: a misspelt filter (`?status=pending` where none is taken) must not be answered
// as if it had been obeyed. Probes outside /v1 (/healthz, /readyz) take any. A parameter given twice
// is said to be repeated.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { recordedDecisions } from '../support/decisions.ts';

const backend = backends()[0]!;
describe('query strings: on GETs that take none, and repeated', () => {
  let svc: TestService;
  before(async () => { svc = await startService(backend); });
  after(async () => { await svc.stop(); });

  test('console and machine GETs without parameters answer 400 unknown_field naming the parameter', async () => {
    const admin = await consoleMember(svc, ['ADMIN']);
    const key = await svc.keyHeader(['ADMIN']);
    const C = `/v1/console/projects/${svc.projectId}`;
    const M = `/v1/projects/${svc.projectId}`;
    for (const [url, headers] of [
      [`${C}/dashboard`, admin.get], [`${C}/settings`, admin.get], [`${C}/me`, admin.get], [`${C}/control-plane`, admin.get],
      ['/v1/console/projects', admin.get], [`${M}/sod`, key],
    ] as const) {
      const plain = await svc.app.inject({ method: 'GET', url, headers });
      assert.equal(plain.statusCode, 200, `${url}: ${plain.body}`);
      const res = await svc.app.inject({ method: 'GET', url: `${url}?status=pending`, headers });
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      assert.equal(res.json().code, 'invalid_request');
      assert.ok(res.json().errors.some((e: { code: string; pointer: string }) => e.code === 'unknown_field' && e.pointer.endsWith('status')), `${url}: ${res.body}`);
    }
    for (const url of ['/healthz?probe=1', '/readyz?probe=1']) assert.equal((await svc.app.inject({ method: 'GET', url })).statusCode, 200, url);
    // HEAD, Fastify's copy of each GET, refuses them too.
    assert.equal((await svc.app.inject({ method: 'HEAD', url: `${M}/sod?bogus=1`, headers: key })).statusCode, 400);
    // So do the other methods: a password sent in the URL is refused, not taken (and logged with it).
    const login = await svc.app.inject({ method: 'POST', url: '/v1/console/login?password=hunter2', payload: { name: 'x', password: 'y' } });
    assert.equal(login.statusCode, 400, login.body);
    assert.ok(login.json().errors.some((e: { code: string; pointer: string }) => e.code === 'unknown_field' && e.pointer.endsWith('password')));
  });

  test('POST /v1/authorize takes no query parameter either: `?dry_run=true` is refused, not decided (and spent) as if obeyed', async () => {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const key = await svc.keyHeader([]);
    const agent = newAgent();
    const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'], max_uses: 1 });
    const payload = { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' };
    const before = (await recordedDecisions(svc.ts.store.db)).length;
    for (const query of ['dry_run=true', 'permit=x&simulate=1']) {
      const res = await svc.app.inject({ method: 'POST', url: `/v1/authorize?${query}`, headers: key, payload });
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
      assert.equal(res.json().code, 'invalid_request');
      assert.deepEqual(res.json().errors, query.split('&').map((p) => ({ pointer: `/${p.split('=')[0]}`, code: 'unknown_field', message: 'is not a known field', in: 'query' })), res.body);
    }
    assert.equal((await recordedDecisions(svc.ts.store.db)).length, before, 'nothing was decided');
    // An empty query is no parameter, as on every route.
    const ok = await svc.app.inject({ method: 'POST', url: '/v1/authorize?', headers: key, payload });
    assert.equal(ok.json().decision, 'ALLOW', ok.body);
  });

  test('a parameter given more than once is refused as that, naming it, whatever its type', async () => {
    const auditor = await consoleMember(svc, ['AUDITOR']);
    const C = `/v1/console/projects/${svc.projectId}`;
    for (const [query, param] of [
      ['memberships?limit=1&limit=2', 'limit'], ['audit?limit=5&limit=5', 'limit'], ['audit?cursor=a&cursor=b', 'cursor'],
      ['approvals?status=pending&status=approved', 'status'], ['executions?status=UNKNOWN&status=FAILED', 'status'],
    ] as const) {
      const res = await svc.app.inject({ method: 'GET', url: `${C}/${query}`, headers: auditor.get });
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
      assert.deepEqual(res.json().errors, [{ pointer: `/${param}`, code: 'wrong_type', message: 'is given more than once; give it once', in: 'query' }], query);
    }
  });
});
