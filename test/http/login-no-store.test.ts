// A sign-in's answer carries the session token (set-cookie) and the CSRF token (body): like a minted
// API key's or a permit's, it is sent with `cache-control: no-store` (OWASP Session Management).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';

let svc: TestService;
before(async () => { svc = await startService(backends()[0]!); });
after(async () => { await svc.stop(); });

test('the answer to a successful sign-in is not stored by any cache', async () => {
  const person = await consoleMember(svc, []);
  const res = await svc.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name: person.name, password: person.password } });
  assert.equal(res.statusCode, 200);
  assert.ok(res.cookies.length > 0 && typeof res.json().csrf_token === 'string');
  assert.equal(res.headers['cache-control'], 'no-store');
});

test('every console answer is no-store and nosniff', async () => {
  const admin = await consoleMember(svc, ['ADMIN']);
  for (const url of [`/v1/console/projects/${svc.projectId}/members`, `/v1/console/projects/${svc.projectId}/dashboard`, `/v1/console/projects/${svc.projectId}/members?bad=1`]) {
    const res = await svc.app.inject({ method: 'GET', url, headers: admin.get });
    assert.equal(res.headers['cache-control'], 'no-store', url);
    assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
  }
});

test('every machine answer is no-store and nosniff too: a key\'s view of the project is no cache\'s to keep', async () => {
  const key = await svc.keyHeader(['ADMIN']);
  for (const url of [`/v1/projects/${svc.projectId}/sod`, `/v1/projects/${svc.projectId}/sod?bad=1`]) {
    const res = await svc.app.inject({ method: 'GET', url, headers: key });
    assert.ok(res.statusCode === 200 || res.statusCode === 400, url);
    assert.equal(res.headers['cache-control'], 'no-store', url);
    assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
  }
  const refused = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/sod` });
  assert.equal(refused.statusCode, 401);
  assert.equal(refused.headers['cache-control'], 'no-store');
});
