// Agents and permits belong to one project: the same agent DID in two projects is two agents, and
// a permit's commitment names it in its own project only. State changes are audited and say why;
// a state change that changes nothing is refused.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { anotherProject } from '../support/projects.ts';
import { activatePolicy, ALLOW_PAYMENTS, decide, issue, newAgent } from '../support/authorize.ts';

for (const backend of backends()) {
  describe(`agent and permit scope on ${backend.name}`, () => {
    let svc: TestService;
    before(async () => {
      svc = await startService(backend);
      await activatePolicy(svc, ALLOW_PAYMENTS);
    });
    after(async () => { await svc.stop(); });
    const READ = { actions: ['read'], resources: ['resource://docs/*'] };
    const auditData = async (kind: string) => (await svc.ts.store.db.selectFrom('audit_events').select('data').where('project_id', '=', svc.projectId).where('kind', '=', kind).execute()).map((e) => JSON.parse(e.data));

    test('freezing, releasing and reading an agent through another project\'s key leaves the same DID here untouched', async () => {
      const key = await svc.keyHeader([]);
      const admin = await svc.keyHeader(['ADMIN']);
      const other = await anotherProject(svc.ts.store, ['ADMIN'], 'service');
      const otherKey = { authorization: `Bearer ${other.secret}` };
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, READ);
      const req = { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' };
      const change = (projectId: string, headers: Record<string, string>, what: 'freeze' | 'release') =>
        svc.app.inject({ method: 'POST', url: `/v1/projects/${projectId}/agents/${what}`, headers, payload: { agent: agent.did } });
      const frozenIn = async (projectId: string, headers: Record<string, string>) =>
        (await svc.app.inject({ method: 'GET', url: `/v1/projects/${projectId}/agents/state?agent=${encodeURIComponent(agent.did)}`, headers })).json().frozen;

      assert.equal((await change(svc.projectId, admin, 'freeze')).statusCode, 200);
      assert.equal(await frozenIn(other.projectId, otherKey), false, 'frozen here, not there');
      assert.equal((await change(other.projectId, otherKey, 'freeze')).statusCode, 200);
      assert.equal((await change(other.projectId, otherKey, 'release')).statusCode, 200);
      assert.equal((await decide(svc, key, req)).reason_code, 'agent_frozen', 'released there, still frozen here');
      assert.equal((await change(svc.projectId, admin, 'release')).statusCode, 200);
      assert.equal((await change(other.projectId, otherKey, 'freeze')).statusCode, 200);
      assert.equal((await decide(svc, key, req)).decision, 'ALLOW', 'frozen there, free here');
      assert.equal(await frozenIn(svc.projectId, key), false);
    });

    test('a member of another project can neither read nor revoke this project\'s permits and agents', async () => {
      const key = await svc.keyHeader([]);
      const other = await anotherProject(svc.ts.store, []);
      const outsider = await consoleMember(svc, ['ADMIN', 'PERMIT_ISSUER', 'AUDITOR'], { projectId: other.projectId });
      const agent = newAgent();
      const permit = await issue(svc, agent.did, READ);
      const theirs = `/v1/console/projects/${other.projectId}`;
      const read = await svc.app.inject({ method: 'GET', url: `${theirs}/permits/${permit.commitment}`, headers: outsider.get });
      assert.equal(read.statusCode, 404, read.body);
      const listed = (await svc.app.inject({ method: 'GET', url: `${theirs}/permits`, headers: outsider.get })).json();
      assert.deepEqual(listed.permits, []);
      assert.deepEqual((await svc.app.inject({ method: 'GET', url: `${theirs}/agents`, headers: outsider.get })).json().agents, []);
      const agentRead = await svc.app.inject({ method: 'GET', url: `${theirs}/agents/${encodeURIComponent(agent.did)}`, headers: outsider.get });
      assert.equal(agentRead.statusCode, 404, agentRead.body);
      const revoke = await svc.app.inject({ method: 'POST', url: `${theirs}/permits/${permit.commitment}/revoke`, headers: outsider.post, payload: {} });
      assert.equal(revoke.statusCode, 404, revoke.body);
      assert.equal((await decide(svc, key, { agent: agent.did, permit: permit.jws, action: 'read', resource: 'resource://docs/a' })).decision, 'ALLOW');
    });

    test('permits page without repeating one; issuing, registering, freezing and releasing in the console are audited with why', async () => {
      const issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
      const admin = await consoleMember(svc, ['ADMIN']);
      const approver = await consoleMember(svc, ['APPROVER']);
      const base = `/v1/console/projects/${svc.projectId}`;
      const agent = newAgent().did;
      const registered = await svc.app.inject({ method: 'POST', url: `${base}/agents`, headers: admin.post, payload: { did: agent, name: 'bot' } });
      assert.equal(registered.statusCode, 201, registered.body);
      assert.ok((await auditData('agent.registered')).some((d) => d.agent === agent && d.name === 'bot'));

      const issued: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await svc.app.inject({ method: 'POST', url: `${base}/permits`, headers: issuer.post, payload: { agent, ...READ, expires_at: new Date(Date.now() + 3_600_000).toISOString() } });
        assert.equal(res.statusCode, 201, res.body);
        issued.push(res.json().commitment);
      }
      assert.deepEqual((await auditData('permit.issued')).filter((d) => d.agent === agent).map((d) => d.commitment).sort(), [...issued].sort());
      const paged: string[] = [];
      for (let cursor = ''; ;) {
        const page = (await svc.app.inject({ method: 'GET', url: `${base}/permits?agent=${encodeURIComponent(agent)}&limit=1${cursor}`, headers: admin.get })).json();
        paged.push(...page.permits.map((p: { commitment: string }) => p.commitment));
        if (!page.next_cursor || paged.length > 3) break;
        cursor = `&cursor=${encodeURIComponent(page.next_cursor)}`;
      }
      assert.deepEqual([...paged].sort(), [...issued].sort());

      // A use count set at issuance binds the decisions.
      const key = await svc.keyHeader([]);
      const once = (await svc.app.inject({ method: 'POST', url: `${base}/permits`, headers: issuer.post, payload: { agent, ...READ, max_uses: 1, expires_at: new Date(Date.now() + 3_600_000).toISOString() } })).json();
      const use = () => decide(svc, key, { agent, permit: once.permit, action: 'read', resource: 'resource://docs/a' });
      assert.equal((await use()).decision, 'ALLOW');
      assert.equal((await use()).reason_code, 'permit_invalid', 'the one use is spent');

      const change = (headers: Record<string, string>, what: 'freeze' | 'release', reason?: string) =>
        svc.app.inject({ method: 'POST', url: `${base}/agents/${what}`, headers, payload: { agent, ...(reason ? { reason } : {}) } });
      const frozen = await change(approver.post, 'freeze', 'odd spending');
      assert.equal(frozen.statusCode, 200, frozen.body);
      assert.equal(frozen.json().reason, 'odd spending');
      assert.ok((await auditData('agent.frozen')).some((d) => d.agent === agent && d.reason === 'odd spending'));
      assert.equal((await change(admin.post, 'release', 'reviewed')).statusCode, 200);
      const again = await change(admin.post, 'release');
      assert.deepEqual([again.statusCode, again.json().code], [409, 'agent_not_frozen']);
      assert.equal((await auditData('agent.released')).filter((d) => d.agent === agent).length, 1, 'a release that changed nothing is not audited');
      // Frozen anew: no release is shown while it is frozen.
      const refrozen = (await change(approver.post, 'freeze')).json();
      assert.deepEqual([refrozen.frozen, refrozen.released_at, refrozen.released_by], [true, null, null]);
      const shown = (await svc.app.inject({ method: 'GET', url: `${base}/agents/${encodeURIComponent(agent)}`, headers: admin.get })).json();
      assert.deepEqual([shown.frozen, shown.released_at, shown.released_by], [true, null, null]);
    });
  });
}
