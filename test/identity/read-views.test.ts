// The console's read views tell the truth: after members come and go, keys are minted and revoked
// and people sign in and out, the control plane and the dashboard count exactly what changed, in
// this project alone, and no view carries a secret.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { anotherProject } from '../support/projects.ts';

for (const backend of backends()) {
  test(`control plane, dashboard and memberships count what changed, in this project only (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const C = `/v1/console/projects/${svc.projectId}`;
      const admin = await consoleMember(svc, ['ADMIN']);
      const auditor = await consoleMember(svc, ['AUDITOR']);
      const view = async (path: string) => {
        const res = await svc.app.inject({ method: 'GET', url: `${C}/${path}`, headers: auditor.get });
        assert.equal(res.statusCode, 200, `${path}: ${res.body}`);
        return res;
      };
      const post = async (path: string, headers: Record<string, string>, payload: object = {}) => {
        const res = await svc.app.inject({ method: 'POST', url: path.startsWith('/') ? path : `${C}/${path}`, headers, payload });
        assert.ok(res.statusCode < 300, `${path}: ${res.body}`);
        return res.json();
      };
      const before = (await view('control-plane')).json();

      // Two service members with keys, one of whose keys is revoked.
      const s1 = await svc.member(['APPROVER']);
      await svc.member(['PERMIT_ISSUER', 'APPROVER']);
      await post(`api-keys/${s1.keyId}/revoke`, admin.post);
      // A person who mints a key and is then removed: grants, key and session go with the membership.
      const author = await consoleMember(svc, ['POLICY_AUTHOR']);
      const minted = await post('api-keys', author.post, { name: 'mine', roles: ['POLICY_AUTHOR'] });
      await post(`members/${author.principalId}/revoke`, admin.post);
      // A member with no role who has signed out.
      const gone = await consoleMember(svc, []);
      await post('/v1/console/logout', gone.post);
      // Another project: its member's session and key count there, not here; a person of both counts here once.
      const other = await anotherProject(svc.ts.store, ['ADMIN']);
      const outsider = await consoleMember(svc, ['ADMIN'], { projectId: other.projectId });
      const both = await consoleMember(svc, ['AUDITOR'], { projectId: other.projectId });
      await post('members', admin.post, { name: both.name, roles: ['APPROVER'] });

      const plane = (await view('control-plane')).json();
      assert.equal(plane.members, before.members + 4, 'two services, the signed-out member and the person of both projects');
      assert.deepEqual(plane.role_holders, { ...before.role_holders, APPROVER: before.role_holders.APPROVER + 3, PERMIT_ISSUER: before.role_holders.PERMIT_ISSUER + 1 });
      assert.deepEqual(plane.api_keys, { live: before.api_keys.live + 1, revoked: before.api_keys.revoked + 2 });
      assert.equal(plane.live_sessions, before.live_sessions + 1, 'the person of both projects; not the removed, the signed-out or the outsider');
      // A session last used two hours ahead (written before the wall clock stepped back) has ended, as its cookie finds (session-lifetime.ts).
      await svc.ts.store.db.updateTable('sessions').set({ last_seen_at: new Date(Date.now() + 2 * 3600_000).toISOString() }).where('principal_id', '=', admin.principalId).execute();
      assert.equal((await svc.app.inject({ method: 'GET', url: `${C}/control-plane`, headers: admin.get })).statusCode, 401);
      assert.equal((await view('control-plane')).json().live_sessions, plane.live_sessions - 1, 'not the session whose last use lies ahead');

      const dashboard = (await view('dashboard')).json();
      assert.equal(dashboard.members, plane.members);
      assert.equal(dashboard.live_api_keys, plane.api_keys.live);
      assert.deepEqual(dashboard.your_roles, ['AUDITOR']);

      const memberships = (await view('memberships?limit=500')).json().memberships as { principal_id: string; active: boolean }[];
      assert.equal(memberships.filter((m) => m.active).length, plane.members);
      assert.deepEqual(memberships.filter((m) => !m.active).map((m) => m.principal_id), [author.principalId]);
      assert.ok(!memberships.some((m) => m.principal_id === outsider.principalId || m.principal_id === other.principalId));
      // The other project's sign-in is audited there, not here.
      const events = (await view('audit?limit=500')).json().items as { actor: string; data: { principal_id?: string } }[];
      assert.ok(events.some((e) => e.data.principal_id === author.principalId), 'this project\'s events are listed');
      assert.ok(!events.some((e) => e.actor === outsider.principalId || e.data.principal_id === outsider.principalId));

      // No view carries a secret: a key's, a password, or any stored hash of one.
      for (const path of ['control-plane', 'dashboard', 'settings', 'me', 'memberships', 'members', 'api-keys', 'audit']) {
        const body = (await view(path)).body;
        for (const secret of [minted.secret, s1.key, author.password, auditor.password]) assert.ok(!body.includes(secret), `${path} carries a secret`);
        assert.doesNotMatch(body, /_hash"|password|"secret"/, path);
      }
    } finally { await svc.stop(); }
  });
}
