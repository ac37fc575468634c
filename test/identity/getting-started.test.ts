// The flow docs/getting-started.md shows with curl, step by step: the bootstrap admin signs in,
// mints a first API key, and calls a machine route with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { codeBlocks, curlCalls, walkthroughPages } from '../support/walkthroughs.ts';

for (const backend of backends()) {
  test(`getting started: login, mint a key, call a machine route (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const admin = svc.bootstrap.admin!;
      const login = await svc.app.inject({ method: 'POST', url: '/v1/console/login', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ name: admin.name, password: admin.password }) });
      assert.equal(login.statusCode, 200);
      const jar = login.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
      const csrf = login.json().csrf_token;
      const projects = await svc.app.inject({ method: 'GET', url: '/v1/console/projects', headers: { cookie: jar } });
      const projectId = projects.json().projects[0].id;
      assert.equal(projectId, svc.projectId);
      const key = await svc.app.inject({
        method: 'POST', url: `/v1/console/projects/${projectId}/api-keys`,
        headers: { cookie: jar, 'x-csrf-token': csrf, 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'first key', roles: ['ADMIN'] }),
      });
      assert.equal(key.statusCode, 201);
      assert.equal(key.headers['cache-control'], 'no-store');
      const sod = await svc.app.inject({ method: 'GET', url: `/v1/projects/${projectId}/sod`, headers: { authorization: `Bearer ${key.json().secret}` } });
      assert.equal(sod.statusCode, 200);
      assert.equal(sod.json().document.four_eyes_policy_activation, false);
    } finally { await svc.stop(); }
  });
}

test('every file the walk-throughs of the README and docs/ write in the checkout is ignored by git (some are private keys)', () => {
  // getting-started.md, and the commands approvals.md (openssl) and audit-log.md (consistency) show.
  const pages = ['README.md', ...readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
  const doc = pages.map((page) => readFileSync(page, 'utf8')).join('\n');
  // Cookie jars (curl -c), openssl -out, redirections, heredocs and files node writes.
  const written = new Set([...doc.matchAll(/(?:-c |-out |> |cat > |writeFileSync\(')([a-z][a-z0-9.-]*\.(?:txt|pem|json|db))/g)].map((m) => m[1]!));
  for (const file of ['jar.txt', 'approver-key.pem', 'proof.json', 'statement.txt', 'consistency.json']) assert.ok(written.has(file), `the walk-throughs are read (${file})`);
  const ignored = new Set(readFileSync('.gitignore', 'utf8').split('\n').map((l) => l.trim().replace(/^\//, '')));
  assert.deepEqual([...written].filter((f) => !ignored.has(f)), []);
});

test('every curl the walk-throughs of the README and docs/ show calls a route the service has, with that method', async () => {
  const calls = walkthroughPages().flatMap(codeBlocks).flatMap(curlCalls).map((c) => c.route);
  assert.ok(calls.length >= 30, `the walk-throughs are read (${calls.length} calls)`);
  const svc = await startService(backends()[0]!);
  try {
    const paths = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json().paths as Record<string, Record<string, unknown>>;
    const routes = new Set(Object.entries(paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{[^}]+\}/g, '{}')}`)));
    assert.deepEqual([...new Set(calls)].filter((c) => !routes.has(c)), []);
  } finally { await svc.stop(); }
});
