// Wire conventions on every route that exists: problem+json for every kind of bad input, request
// ids, health and readiness, and an OpenAPI document that lists every route with its schemas.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { beforeBodyCredentials } from '../support/console.ts';


type Op = { method: string; path: string; hasBody: boolean; bodyLimit: number };

function operations(doc: any): Op[] {
  const ops: Op[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      // A route with a larger body limit of its own says so in its body's description.
      const limit = /Body limit: (\d+) bytes/.exec(op.requestBody?.content?.['application/json']?.schema?.description ?? '');
      ops.push({ method: method.toUpperCase(), path, hasBody: Boolean(op.requestBody), bodyLimit: limit ? Number(limit[1]) : 64 * 1024 });
    }
  }
  return ops;
}

/** A concrete URL for an OpenAPI path, with plausible ids in the parameters. */
const concrete = (path: string, projectId: string) =>
  path.replace('{projectId}', projectId).replace(/\{[A-Za-z]+\}/g, 'x_00000000000000000000000000');

function assertProblem(res: { statusCode: number; headers: Record<string, unknown>; json(): any }, status: number, code: string) {
  assert.equal(res.statusCode, status);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json();
  assert.equal(body.code, code);
  assert.equal(body.status, status);
  assert.equal(typeof body.detail, 'string');
  assert.equal(body.request_id, res.headers['x-request-id']);
}

const backend = backends()[0]!;

describe('wire conventions', () => {
  let svc: TestService;
  let ops: Op[];
  let credentialsFor: (path: string, bodyLimit: number) => Record<string, string>;
  before(async () => {
    svc = await startService(backend);
    const res = await svc.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    ops = operations(res.json());
    credentialsFor = await beforeBodyCredentials(svc);
  });
  after(async () => { await svc.stop(); });

  test('the OpenAPI document is 3.1 and every route has a response schema', async () => {
    const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    assert.equal(doc.openapi, '3.1.0');
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        assert.ok(op.responses && Object.keys(op.responses).length > 0, `${method} ${path} documents its responses`);
        if (['post', 'put', 'patch'].includes(method) && !path.endsWith('/submit')) {
          assert.ok(op.requestBody, `${method} ${path} documents its request body`);
        }
      }
    }
    assert.ok(ops.some((o) => o.path === '/healthz'));
    // Every /v1 route but login and register states how it authenticates.
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      if (!path.startsWith('/v1/') || ['/v1/console/login', '/v1/console/register'].includes(path)) continue;
      for (const [method, op] of Object.entries<any>(item)) {
        const scheme = path.startsWith('/v1/console/') ? 'session' : 'apiKey';
        assert.ok(op.security?.some((s: Record<string, unknown>) => scheme in s), `${method} ${path} declares ${scheme} security`);
      }
    }
  });

  test('every response carries an x-request-id, and problems repeat it', async () => {
    const ok = await svc.app.inject({ method: 'GET', url: '/healthz' });
    assert.match(String(ok.headers['x-request-id']), /^req_[0-9a-z]{26}$/);
    const missing = await svc.app.inject({ method: 'GET', url: '/nope' });
    assertProblem(missing, 404, 'not_found');
  });

  test('healthz and readyz', async () => {
    assert.deepEqual((await svc.app.inject({ method: 'GET', url: '/healthz' })).json(), { status: 'ok' });
    assert.deepEqual((await svc.app.inject({ method: 'GET', url: '/readyz' })).json(), { status: 'ready' });
  });

  test('requests that arrive while the service closes get a problem+json 503', async () => {
    const other = await startService(backend);
    const closing = other.app.close();
    const res = await other.app.inject({ method: 'GET', url: '/healthz' });
    assertProblem(res, 503, 'shutting_down');
    assert.equal(res.headers.connection, 'close');
    await closing;
    await other.stop();
  });

  test('readyz answers 503 when the database does not', async () => {
    const other = await startService(backend);
    await other.ts.store.close();
    const res = await other.app.inject({ method: 'GET', url: '/readyz' });
    assertProblem(res, 503, 'not_ready');
    await other.stop();
  });

  test('unknown routes are 404 and wrong methods 405 with Allow, on every route', async () => {
    assertProblem(await svc.app.inject({ method: 'GET', url: '/v1/nothing/here' }), 404, 'not_found');
    for (const op of ops) {
      const url = concrete(op.path, svc.projectId);
      const res = await svc.app.inject({ method: 'PATCH', url, payload: {} });
      assertProblem(res, 405, 'method_not_allowed');
      assert.ok(String(res.headers.allow).includes(op.method), `${op.method} ${op.path}: allow lists ${res.headers.allow}`);
      // A GET answers HEAD too, and Allow says so.
      if (op.method === 'GET') assert.ok(String(res.headers.allow).split(', ').includes('HEAD'), `${op.path}: allow lists ${res.headers.allow}`);
      // The router matches paths exactly: with a trailing slash it is another route or none (404),
      // never a 405 that lists the very method sent.
      const slash = await svc.app.inject({ method: op.method as 'GET', url: `${url}/`, ...(op.hasBody ? { payload: {} } : {}) });
      assert.notEqual(slash.statusCode, 405, `${op.method} ${url}/: ${slash.body}`);
    }
  });

  test('malformed JSON, wrong content type, empty and oversized bodies on every body route', async () => {
    for (const op of ops.filter((o) => o.hasBody)) {
      const url = concrete(op.path, svc.projectId);
      const label = `${op.method} ${op.path}`;
      // The policy document routes authenticate before they read the body (decision 0153): give them credentials.
      const credentials = credentialsFor(op.path, op.bodyLimit);
      const malformed = await svc.app.inject({ method: op.method as 'POST', url, headers: { ...credentials, 'content-type': 'application/json' }, payload: '{"a": ' });
      assertProblem(malformed, 400, 'malformed_json');
      const wrongType = await svc.app.inject({ method: op.method as 'POST', url, headers: { ...credentials, 'content-type': 'text/plain' }, payload: 'hello' });
      assert.equal(wrongType.statusCode, 415, label);
      const empty = await svc.app.inject({ method: op.method as 'POST', url, headers: { ...credentials, 'content-type': 'application/json' }, payload: '' });
      assert.ok([400, 401].includes(empty.statusCode), `${label}: empty body gives ${empty.statusCode}`);
      const big = await svc.app.inject({ method: op.method as 'POST', url, headers: { ...credentials, 'content-type': 'application/json' }, payload: JSON.stringify({ x: 'a'.repeat(op.bodyLimit + 6 * 1024) }) });
      assertProblem(big, 413, 'payload_too_large');
      const poisoned = await svc.app.inject({ method: op.method as 'POST', url, headers: { ...credentials, 'content-type': 'application/json' }, payload: '{"__proto__": {"admin": true}}' });
      assert.ok(poisoned.statusCode >= 400 && poisoned.statusCode < 500, `${label}: __proto__ gives ${poisoned.statusCode}`);
    }
  });

  test('no route answers 500 to hostile query strings and parameters', async () => {
    for (const op of ops) {
      const url = concrete(op.path, svc.projectId) + '?limit=-1&cursor=%FF%FE&x=' + 'a'.repeat(2000);
      const res = await svc.app.inject({ method: op.method as 'GET', url, ...(op.hasBody ? { payload: {} } : {}) });
      assert.ok(res.statusCode < 500, `${op.method} ${op.path} answered ${res.statusCode}`);
    }
  });
});
