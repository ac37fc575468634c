// Checks a mutation audit found unguarded in http/auth and http/paging: each test fails on a
// one-line breakage that no other test noticed.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { anotherProject } from '../support/projects.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { page } from '../../src/http/paging.ts';

test('page: a last page holding exactly `limit` items has no next cursor; one more row makes one', () => {
  const rows = [{ id: 'c' }, { id: 'b' }];
  assert.deepEqual(page(rows, 2), { items: rows, next_cursor: null });
  const more = page([...rows, { id: 'a' }], 2);
  assert.deepEqual(more.items, rows);
  assert.notEqual(more.next_cursor, null);
});

for (const backend of backends()) {
  describe(`auth gaps on ${backend.name}`, () => {
    let svc: TestService;
    before(async () => { svc = await startService(backend); });
    after(async () => { await svc.stop(); });

    test('an API key of another project is 403 on this project\'s machine routes, whatever its roles', async () => {
      const { projectId, secret } = await anotherProject(svc.ts.store, ['ADMIN', 'AUDITOR', 'POLICY_AUTHOR', 'PERMIT_ISSUER', 'APPROVER']);
      const headers = { authorization: `Bearer ${secret}` };
      for (const path of ['executions', 'approvals', 'audit', 'policy']) {
        const own = await svc.app.inject({ method: 'GET', url: `/v1/projects/${projectId}/${path}`, headers });
        const foreign = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/${path}`, headers });
        assert.notEqual(own.statusCode, 403, `${path} in its own project: ${own.body}`);
        assert.equal(foreign.statusCode, 403, `${path} in another project: ${foreign.body}`);
        assert.equal(foreign.json().code, 'forbidden');
      }
    });

    test('CSRF: a valid header token with a different CSRF cookie is refused (the double submit is compared)', async () => {
      const admin = await consoleMember(svc, ['ADMIN']);
      const target = await svc.member(['APPROVER']);
      const url = `/v1/console/projects/${svc.projectId}/members/${target.principalId}/roles`;
      const session = admin.get.cookie.split('; ').find((c) => c.startsWith('gavel_session='))!;
      const res = await svc.app.inject({
        method: 'POST', url, payload: { role: 'AUDITOR' },
        headers: { 'content-type': 'application/json', cookie: `${session}; gavel_csrf=not-the-token`, 'x-csrf-token': admin.post['x-csrf-token']! },
      });
      assert.equal(res.statusCode, 403, res.body);
      assert.equal(res.json().code, 'csrf_failed');
      const ok = await svc.app.inject({ method: 'POST', url, payload: { role: 'AUDITOR' }, headers: admin.post });
      assert.ok(ok.statusCode < 300, `the same request with its own cookie passes: ${ok.body}`);
    });

    test('a project id that is not one (a NUL in it, say) is 403 on both planes, never a 500', async () => {
      // Authentication reads the path's project before its schema is checked (decision 0001), and
      // PostgreSQL cannot compare a string holding a NUL.
      const admin = await consoleMember(svc, ['ADMIN', 'AUDITOR']);
      const key = await svc.keyHeader(['ADMIN']);
      for (const projectId of ['prj_%00', `${svc.projectId}%00`, 'x', '%C3%A9']) {
        for (const [method, url, headers] of [
          ['GET', `/v1/console/projects/${projectId}/dashboard`, admin.get], ['GET', `/v1/console/projects/${projectId}/memberships`, admin.get],
          ['POST', `/v1/console/projects/${projectId}/agents/freeze`, admin.post], ['GET', `/v1/projects/${projectId}/sod`, key],
        ] as const) {
          const res = await svc.app.inject({ method, url, headers, ...(method === 'POST' ? { payload: {} } : {}) });
          assert.equal(res.statusCode, 403, `${method} ${url}: ${res.body}`);
          assert.equal(res.json().code, 'forbidden');
        }
      }
    });
  });
}
