// Two projects of one installation call the same configured merchant with the same nonce. A nonce is
// unique per project only, and a merchant de-duplicates on the Idempotency-Key alone: the key it
// receives must tell the two projects' calls apart, or the merchant may answer one project's call
// with the other's stored result (nothing done, yet SUCCEEDED), and one project could pre-empt
// another's nonces.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { merchantsFile, startMerchant, type TestMerchant } from '../support/merchant.ts';
import { newId } from '../../src/lib/ids.ts';
import { mintApiKey } from '../../src/services/identity/api-keys.ts';
import type { Role } from '../../src/domain/access/roles.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };

for (const backend of backends()) {
  describe(`merchant idempotency keys across projects on ${backend.name}`, () => {
    let svc: TestService;
    let merchant: TestMerchant;
    before(async () => {
      merchant = await startMerchant();
      svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url, 400) });
    });
    after(async () => { await svc.stop(); await merchant.close(); });

    /** A second project with a member holding `roles` and a key carrying them. */
    async function otherProject(roles: Role[]): Promise<{ projectId: string; key: string }> {
      const projectId = newId('prj');
      const principalId = newId('prn');
      const at = new Date(Date.now() - 1000).toISOString();
      const key = await svc.ts.store.transaction(async (trx) => {
        await trx.insertInto('projects').values({ id: projectId, name: 'other', created_at: at }).execute();
        await trx.insertInto('principals').values({ id: principalId, kind: 'service', name: `svc-${principalId}`, password_hash: null, created_at: at, disabled_at: null }).execute();
        await trx.insertInto('memberships').values({ project_id: projectId, principal_id: principalId, created_at: at, created_by: null, revoked_at: null }).execute();
        for (const role of roles) await trx.insertInto('role_grants').values({ project_id: projectId, principal_id: principalId, role, granted_at: at, granted_by: null }).execute();
        return mintApiKey(trx, { projectId, principalId, name: 'other', roles, actor: 'system' });
      });
      return { projectId, key: key.secret };
    }

    test('the same nonce in two projects reaches the merchant under two Idempotency-Keys, each naming its project', async () => {
      // Project A: the test service's own project.
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agentA = newAgent();
      const permitA = (await issue(svc, agentA.did, PAY)).jws;
      const keyA = await svc.keyHeader([]);
      // Project B.
      const b = await otherProject(['POLICY_AUTHOR']);
      const bSvc = { ...svc, projectId: b.projectId, keyHeader: async () => ({ authorization: `Bearer ${b.key}` }) } as TestService;
      await activatePolicy(bSvc, ALLOW_PAYMENTS);
      const agentB = newAgent();
      const permitB = (await issue(bSvc, agentB.did, PAY)).jws;

      const nonce = `order-${randomUUID()}`;
      const pay = (authorization: string, agent: string, permit: string) => svc.app.inject({
        method: 'POST', url: '/v1/authorize', headers: { authorization },
        payload: { agent, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' }, execution: { merchant: 'shop', operation: 'ok', payload: { order: 'o-1' }, nonce } },
      });
      const first = await pay(keyA.authorization, agentA.did, permitA);
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(first.json().execution.status, 'SUCCEEDED');
      const second = await pay(`Bearer ${b.key}`, agentB.did, permitB);
      assert.equal(second.statusCode, 200, second.body);
      assert.equal(second.json().decision, 'ALLOW', 'a nonce of project A binds nothing in project B');
      assert.equal(second.json().execution.status, 'SUCCEEDED');

      const received = merchant.idempotencyKeys.filter((k) => k.endsWith(nonce));
      assert.equal(received.length, 2, 'one call per project');
      assert.notEqual(received[0], received[1], 'the merchant must be able to tell the two projects\' calls apart');
      assert.deepEqual(received, [`${svc.projectId}:${nonce}`, `${b.projectId}:${nonce}`]);
      assert.equal(merchant.badSignatures, 0, 'the signature covers the key as sent');
    });
  });
}
