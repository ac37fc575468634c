// The routes that take documents of up to 8 MiB (policy save, simulate, replay, on both planes):
// a caller without a credential is refused before the body is read, and a credentialed one cannot
// make the parser build millions of objects (2.7 million `{}` ran the process out of memory).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { MAX_JSON_CONTAINERS } from '../../src/http/body.ts';

const backend = backends()[0]!;
describe('large bodies', () => {
  let svc: TestService;
  before(async () => { svc = await startService(backend); });
  after(async () => { await svc.stop(); });

  // About 8 MB of `{},`: 2.7 million objects, far past what any document needs.
  const flood = `{"note":"x","policy":{"spec_version":"1","rules":[${'{},'.repeat(2_700_000)}{}]}}`;

  test('without a credential, an 8 MiB body is refused before it is read: 401 (machine), 401 (console)', async () => {
    const M = `/v1/projects/${svc.projectId}/policy`;
    const C = `/v1/console/projects/${svc.projectId}/policy`;
    for (const [method, url] of [['PUT', M], ['POST', `${M}/simulate`], ['POST', `${M}/replay`], ['PUT', C], ['POST', `${C}/simulate`], ['POST', `${C}/replay`]] as const) {
      const res = await svc.app.inject({ method, url, headers: { 'content-type': 'application/json' }, payload: flood });
      assert.equal(res.statusCode, 401, `${method} ${url}: ${res.body.slice(0, 200)}`);
    }
    // A key without the route's role is refused before the body too.
    const reader = await svc.keyHeader([]);
    const res = await svc.app.inject({ method: 'PUT', url: M, headers: { ...reader, 'content-type': 'application/json' }, payload: flood });
    assert.equal(res.statusCode, 403, res.body.slice(0, 200));
  });

  test('with a credential, a body of more arrays and objects than any document holds is a 400 naming the bound', async () => {
    const author = await svc.keyHeader(['POLICY_AUTHOR']);
    const res = await svc.app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/policy`, headers: { ...author, 'content-type': 'application/json' }, payload: flood });
    assert.equal(res.statusCode, 400, res.body.slice(0, 200));
    assert.deepEqual(res.json().errors.map((e: { code: string }) => e.code), ['too_many_values']);
    assert.match(res.json().errors[0].message, new RegExp(`${MAX_JSON_CONTAINERS}`));
    // A console author the same, after its CSRF check.
    const person = await consoleMember(svc, ['POLICY_AUTHOR']);
    const c = await svc.app.inject({ method: 'PUT', url: `/v1/console/projects/${svc.projectId}/policy`, headers: { ...person.post, 'content-type': 'application/json' }, payload: flood });
    assert.equal(c.statusCode, 400, c.body.slice(0, 200));
    // A large document within the bound is read as before (and refused by the policy's own rules).
    const wide = `{"note":"x","policy":{"spec_version":"1","rules":[${Array.from({ length: 10_001 }, (_, i) => `{"id":"r${i}","effect":"ALLOW"}`).join(',')}]}}`;
    const big = await svc.app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/policy`, headers: { ...author, 'content-type': 'application/json' }, payload: wide });
    assert.equal(big.statusCode, 400, big.body.slice(0, 200));
    assert.ok(big.json().errors.some((e: { code: string }) => e.code !== 'too_many_values'), 'the policy validator read it');
  });
});
