// An approval whose approver lost APPROVER stays lapsed when the role comes back (docs/approvals.md,
// "lapsed"): only an APPROVER grant made before the approval counts. That was judged by wall-clock
// stamps (granted_at <= the approval's created_at): a re-grant stamped by a clock behind the one that
// recorded the approval revived it, and the next decision consumed it (decision 0201, addendum).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { newApprover, type Approver } from '../support/approvals.ts';
import { grantRole, revokeRole } from '../../src/services/identity/members.ts';

const MINUTE = 60_000;

for (const backend of backends()) {
  describe(`an approval and its approver's grants are ordered by the database, not by clocks (${backend.name})`, () => {
    let svc: TestService;
    let key: { authorization: string };
    const base = () => `/v1/projects/${svc.projectId}/approvals`;
    const authorize = (body: Record<string, unknown>) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body });
    const status = async (id: string) => {
      const res = await svc.app.inject({ method: 'GET', url: `${base()}?limit=500`, headers: key });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().approvals.find((o: { id: string }) => o.id === id).status;
    };
    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
    });
    after(async () => { await svc.stop(); });

    /** An obligation approved by `signer`, recorded with the service's clock `offset` ms off. */
    async function approved(signer: Approver, offset: number) {
      const agent = newAgent();
      const permit = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const req = { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' } };
      const opened = (await authorize(req)).json();
      assert.equal(opened.decision, 'REQUIRE_APPROVAL', JSON.stringify(opened));
      const id = opened.approval_request_id as string;
      const statement = (await svc.app.inject({ method: 'GET', url: `${base()}?limit=500`, headers: key })).json().approvals.find((o: { id: string }) => o.id === id).statement;
      const saved = svc.deps.clock;
      svc.deps.clock = { now: () => new Date(Date.now() + offset) };
      try {
        const res = await svc.app.inject({ method: 'POST', url: base(), headers: key, payload: { approval_request_id: id, key_id: signer.keyId, signature: signer.sign(statement) } });
        assert.equal(res.statusCode, 201, res.body);
      } finally { svc.deps.clock = saved; }
      return { req, id };
    }
    const role = (signer: Approver) => ({ projectId: svc.projectId, principalId: signer.principalId, role: 'APPROVER' as const, actor: 'system' });

    for (const [name, recordedAt, regrantedAt] of [
      ['the role granted again by a clock stepped back', 0, -5 * MINUTE],
      ['the approval recorded by a clock ahead, the role granted again by the right one', 5 * MINUTE, 0],
    ] as const) {
      test(`an approver who loses APPROVER and gets it back revives nothing: ${name}`, async () => {
        const signer = await newApprover(svc);
        const { req, id } = await approved(signer, recordedAt);
        assert.equal(await status(id), 'approved');
        await revokeRole(svc.deps.store, role(signer), new Date());
        assert.equal(await status(id), 'lapsed');
        await grantRole(svc.deps.store, role(signer), new Date(Date.now() + regrantedAt));
        assert.equal(await status(id), 'lapsed', 'still lapsed with the role back');
        const res = (await authorize({ ...req, approval_request_id: id })).json();
        assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
        assert.match(res.detail, /lost APPROVER after approving/);
        // A new approval, after the grant, counts again.
        const fresh = await approved(signer, regrantedAt);
        assert.equal((await authorize({ ...fresh.req, approval_request_id: fresh.id })).json().decision, 'ALLOW');
      });
    }
  });
}
