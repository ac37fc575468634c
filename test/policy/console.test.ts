// The console twins of the policy routes: same behaviour behind a session, and the four-eyes rule
// holding across planes (a version saved with a key may not be activated by the same person's session).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { getActivePolicy } from '../../src/services/policy/active.ts';

const DOC = { spec_version: '1', rules: [{ id: 'reads', effect: 'ALLOW', when: { op: 'eq', input: 'action', value: 'read' } }] };

for (const backend of backends()) {
  describe(`console policy routes (${backend.name})`, () => {
    let svc: TestService;
    before(async () => { svc = await startService(backend); });
    after(async () => { await svc.stop(); });

    test('save, list, activate and read through a session; ADMIN refused and audited', async () => {
      const author = await consoleMember(svc, ['POLICY_AUTHOR']);
      const admin = await consoleMember(svc, ['ADMIN']);
      const base = `/v1/console/projects/${svc.projectId}/policy`;
      const saved = await svc.app.inject({ method: 'PUT', url: base, headers: author.post, payload: JSON.stringify({ policy: DOC, note: 'from the console' }) });
      assert.equal(saved.statusCode, 201, saved.body);
      assert.equal(saved.json().created_by, author.principalId);
      const refused = await svc.app.inject({ method: 'POST', url: `${base}/activate`, headers: admin.post, payload: JSON.stringify({ version: saved.json().version }) });
      assert.equal(refused.statusCode, 403);
      const events = await svc.ts.store.db.selectFrom('audit_events').select(['actor', 'data']).where('kind', '=', 'policy.activation_refused').execute();
      assert.equal(events.length, 1);
      assert.equal(events[0]!.actor, admin.principalId);
      const ok = await svc.app.inject({ method: 'POST', url: `${base}/activate`, headers: author.post, payload: JSON.stringify({ version: saved.json().version }) });
      assert.equal(ok.statusCode, 200, ok.body);
      assert.equal((await getActivePolicy(svc.ts.store.db, svc.projectId))?.version, saved.json().version);
      const read = await svc.app.inject({ method: 'GET', url: base, headers: admin.get });
      assert.equal(read.json().note, 'from the console');
      const list = await svc.app.inject({ method: 'GET', url: `${base}/versions`, headers: admin.get });
      assert.equal(list.json().items[0].state, 'active');
      const noCsrf = await svc.app.inject({ method: 'PUT', url: base, headers: { ...author.get, 'content-type': 'application/json' }, payload: JSON.stringify({ policy: DOC, note: 'x' }) });
      assert.equal(noCsrf.statusCode, 403);
      assert.equal(noCsrf.json().code, 'csrf_failed');
    });
  });
}
