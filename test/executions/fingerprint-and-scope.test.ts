// Checks a mutation audit found unguarded: "the same action" a nonce binds includes the amount and
// the intent, and a project's ADMIN resolves only that project's executions.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startPayments, stopBoth } from '../support/payments.ts';
import { anotherProject } from '../support/projects.ts';
import { type TestService } from '../support/service.ts';
import { type Agent } from '../support/authorize.ts';
import { type TestMerchant } from '../support/merchant.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };

for (const backend of backends()) {
  describe(`execution gaps on ${backend.name}`, () => {
    let svc: TestService;
    let merchant: TestMerchant;
    let key: { authorization: string };
    let agent: Agent;
    let permit: string;
    const pay = (operation: string, nonce: string, over: Record<string, unknown> = {}) => svc.app.inject({
      method: 'POST', url: '/v1/authorize', headers: key,
      payload: { agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' }, execution: { merchant: 'shop', operation, payload: { order: 'o-1' }, nonce }, ...over },
    });

    before(async () => {
      ({ svc, merchant, key, agent, permit } = await startPayments(backend, PAY));
    });
    after(() => stopBoth(svc, merchant));

    test('a settled nonce repeated with another amount or another intent is nonce_reused, not a REPLAY of the first call', async () => {
      const nonce = randomUUID();
      const first = await pay('ok', nonce, { intent: 'invoice-1' });
      assert.equal(first.json().execution.status, 'SUCCEEDED', first.body);
      const same = await pay('ok', nonce, { intent: 'invoice-1' });
      assert.equal(same.json().decision, 'REPLAY', same.body);
      for (const over of [{ intent: 'invoice-1', amount: { minor: 900, currency: 'EUR' } }, { intent: 'invoice-2' }, {}]) {
        const res = await pay('ok', nonce, over);
        assert.equal(res.statusCode, 409, `${JSON.stringify(over)}: ${res.body}`);
        assert.equal(res.json().code, 'nonce_reused');
      }
      assert.equal(merchant.calls.get(nonce), 1);
    });

    test('a settled nonce repeated with its numbers spelt otherwise (5e2 or 500.0 for 500, 1.10 or 11e-1 for 1.1, -0 or 0.0 for 0) is the same action: REPLAY, one call (decision 0001, addendum)', async () => {
      const nonce = randomUUID();
      const raw = (minor: string, payload: string) => svc.app.inject({
        method: 'POST', url: '/v1/authorize', headers: { ...key, 'content-type': 'application/json' },
        payload: `{"agent":"${agent.did}","permit":"${permit}","action":"pay","resource":"resource://shop/1","amount":{"minor":${minor},"currency":"EUR"},`
          + `"execution":{"merchant":"shop","operation":"ok","payload":${payload},"nonce":"${nonce}"}}`,
      });
      const first = await raw('500', '{"order":"o-1","rate":1.1,"n":0}');
      assert.equal(first.json().execution?.status, 'SUCCEEDED', first.body);
      for (const [minor, payload] of [['5e2', '{"order":"o-1","rate":1.10,"n":-0}'], ['500.0', '{"order":"o-1","rate":11e-1,"n":0.0}']]) {
        const again = await raw(minor!, payload!);
        assert.deepEqual([again.statusCode, again.json().decision, again.json().execution], [200, 'REPLAY', first.json().execution], `${minor} ${payload}: ${again.body}`);
      }
      assert.equal((await raw('501', '{"order":"o-1","rate":1.1,"n":0}')).json().code, 'nonce_reused');
      assert.equal(merchant.calls.get(nonce), 1);
    });

    test('an ADMIN of another project cannot resolve this project\'s UNKNOWN execution', async () => {
      const unknown = (await pay('fail', randomUUID())).json().execution;
      assert.equal(unknown.status, 'UNKNOWN');
      // Project B, with a person holding ADMIN there.
      const { projectId, secret } = await anotherProject(svc.ts.store, ['ADMIN']);
      const res = await svc.app.inject({
        method: 'POST', url: `/v1/projects/${projectId}/executions/resolve`, headers: { authorization: `Bearer ${secret}` },
        payload: { execution_id: unknown.id, outcome: 'SUCCEEDED', note: 'not mine to say' },
      });
      assert.equal(res.statusCode, 404, res.body);
      const row = await svc.ts.store.db.selectFrom('executions').select(['status', 'resolved_by']).where('id', '=', unknown.id).executeTakeFirstOrThrow();
      assert.equal(row.status, 'UNKNOWN');
      assert.equal(row.resolved_by, null);
    });
  });
}
