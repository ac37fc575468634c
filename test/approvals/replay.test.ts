// A REPLAY never consumes an approval (issue 7): the nonce is answered from the stored execution
// before any decision is taken, so an approved obligation named by the repeat stays approved.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { newApprover } from '../support/approvals.ts';
import { merchantsFile, startMerchant } from '../support/merchant.ts';

for (const backend of backends()) {
  test(`a REPLAY never consumes an approval (${backend.name})`, async () => {
    const merchant = await startMerchant();
    const svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url) });
    try {
      const key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const approver = await newApprover(svc);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const req = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' } };
      const authorize = async (body: Record<string, unknown>) => (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body })).json();
      const statusOf = async (id: string) => {
        const res = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/approvals?limit=500`, headers: key });
        return res.json().approvals.find((o: { id: string }) => o.id === id);
      };
      const approve = async (id: string) => {
        const o = await statusOf(id);
        const res = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/approvals`, headers: key, payload: { approval_request_id: id, key_id: approver.keyId, signature: approver.sign(o.statement) } });
        assert.equal(res.statusCode, 201, res.body);
      };
      const execution = (nonce: string) => ({ merchant: 'shop', operation: 'ok', payload: { order: 1 }, nonce });

      // The obligation states the call (decision 0503), so the request that opens it carries it too.
      const nonce = randomUUID();
      const first = await authorize({ ...req, execution: execution(nonce) });
      assert.equal(first.decision, 'REQUIRE_APPROVAL');
      await approve(first.approval_request_id);
      const executed = await authorize({ ...req, approval_request_id: first.approval_request_id, execution: execution(nonce) });
      assert.equal(executed.decision, 'ALLOW', JSON.stringify(executed));
      assert.equal(executed.execution.status, 'SUCCEEDED');
      assert.equal((await statusOf(first.approval_request_id)).status, 'consumed');

      // A second obligation, approved, then named by a repeat of the executed request.
      const second = await authorize({ ...req, execution: execution(randomUUID()) });
      await approve(second.approval_request_id);
      const replay = await authorize({ ...req, approval_request_id: second.approval_request_id, execution: execution(nonce) });
      assert.equal(replay.decision, 'REPLAY');
      assert.equal(replay.execution.id, executed.execution.id);
      assert.equal((await statusOf(second.approval_request_id)).status, 'approved', 'the replay consumed nothing');
      assert.equal(merchant.calls.get(nonce), 1);

      // The approval is still good for a new action.
      const fresh = await authorize({ ...req, approval_request_id: second.approval_request_id, execution: execution(randomUUID()) });
      assert.equal(fresh.decision, 'ALLOW');
      assert.equal((await statusOf(second.approval_request_id)).status, 'consumed');
    } finally {
      await svc.stop();
      await merchant.close();
    }
  });
}
