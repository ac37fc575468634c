// 401 answers of the machine plane carry the bearer challenge (RFC 9110 §11.6.1, RFC 6750 §3).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';

for (const backend of backends()) {
  describe(`401 challenges on ${backend.name}`, () => {
    let svc: TestService;
    before(async () => { svc = await startService(backend); });
    after(async () => { await svc.stop(); });

    const unauthorized = async (url: string, headers: Record<string, string>, method: 'GET' | 'POST' = 'GET') => {
      const res = await svc.app.inject({ method, url, headers, ...(method === 'POST' ? { payload: {} } : {}) });
      assert.equal(res.statusCode, 401, res.body);
      assert.equal(res.json().code, 'unauthorized');
      return res.headers['www-authenticate'];
    };

    test('no key: "Bearer"; a key that is malformed, unknown or revoked: invalid_token', async () => {
      const audit = `/v1/projects/${svc.projectId}/audit`;
      assert.equal(await unauthorized(audit, {}), 'Bearer');
      assert.equal(await unauthorized('/v1/authorize', {}, 'POST'), 'Bearer');
      assert.equal(await unauthorized(audit, { authorization: 'Basic dXNlcjpwdw==' }), 'Bearer');
      assert.equal(await unauthorized(audit, { authorization: 'Bearer nope' }), 'Bearer error="invalid_token"');
      assert.equal(await unauthorized('/v1/authorize', { authorization: `Bearer gvl_${'A'.repeat(43)}` }, 'POST'), 'Bearer error="invalid_token"');
      const { key, keyId } = await svc.member(['AUDITOR']);
      assert.equal((await svc.app.inject({ method: 'GET', url: audit, headers: { authorization: `Bearer ${key}` } })).statusCode, 200);
      await svc.ts.store.db.updateTable('api_keys').set({ revoked_at: new Date().toISOString() }).where('id', '=', keyId).execute();
      assert.equal(await unauthorized(audit, { authorization: `Bearer ${key}` }), 'Bearer error="invalid_token"');
    });

    test('the scheme is case-insensitive and one or more spaces separate it from the key (RFC 9110 §11.4, RFC 6750 §2.1)', async () => {
      const audit = `/v1/projects/${svc.projectId}/audit`;
      const { key } = await svc.member(['AUDITOR']);
      for (const authorization of [`Bearer ${key}`, `bearer ${key}`, `Bearer  ${key}`, `BEARER   ${key}`]) {
        const res = await svc.app.inject({ method: 'GET', url: audit, headers: { authorization } });
        assert.equal(res.statusCode, 200, `${JSON.stringify(authorization.slice(0, 10))}: ${res.body}`);
      }
      // 1*SP is spaces only: with a tab, or no separator, the header does not use the scheme.
      assert.equal(await unauthorized(audit, { authorization: `Bearer\t${key}` }), 'Bearer');
      assert.equal(await unauthorized(audit, { authorization: `Bearer${key}` }), 'Bearer');
    });

    test('the console plane (a session cookie, no bearer scheme) sends no challenge', async () => {
      assert.equal(await unauthorized('/v1/console/projects', {}), undefined);
    });
  });
}
