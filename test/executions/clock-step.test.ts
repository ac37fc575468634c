// The wall clock steps forward (an NTP correction, a VM resumed) while a merchant call is out. A
// call in flight is abandoned by its instance once the longest merchant timeout has passed (a timer,
// not the wall clock), so its row becomes UNKNOWN only after that time plus a margin. Timed by the
// row's created_at against the wall clock, the keeper's own next sweep took a step of that size for
// the time passed and marked the live call UNKNOWN: the merchant's answer was then discarded and the
// caller told UNKNOWN, for a person to resolve a payment that had succeeded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { merchantsFile, startMerchant } from '../support/merchant.ts';
import { stopBoth } from '../support/payments.ts';
import { AGE_MARGIN_MS } from '../../src/services/executions/recovery.ts';

const MAX_TIMEOUT_MS = 20_000;

for (const backend of backends()) {
  test(`a wall clock stepped forward past the longest timeout does not make a call in flight UNKNOWN (${backend.name})`, async () => {
    const merchant = await startMerchant();
    let step = 0;
    const svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url, MAX_TIMEOUT_MS) }, undefined, { clock: { now: () => new Date(Date.now() + step) } });
    const heartbeat = async () => (await svc.ts.store.db.selectFrom('execution_instances').select('heartbeat_at').where('id', '=', svc.deps.executions.instanceId).executeTakeFirstOrThrow()).heartbeat_at;
    /** Resolves once the keeper has run a whole tick (beat, then sweep) begun after this call. */
    const wholeTick = async () => {
      let seen = await heartbeat();
      for (let beats = 0; beats < 2; beats++) {
        const from = seen;
        while ((seen = await heartbeat()) === from) await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    try {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const pending = svc.app.inject({
        method: 'POST', url: '/v1/authorize', headers: await svc.keyHeader([]),
        payload: { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' }, execution: { merchant: 'shop', operation: 'hold', payload: {}, nonce: randomUUID() } },
      });
      await merchant.waitForCalls(1);
      step = MAX_TIMEOUT_MS + AGE_MARGIN_MS + 5_000;
      await wholeTick();
      merchant.release();
      const res = await pending;
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().execution.status, 'SUCCEEDED', 'the merchant\'s answer is recorded');
      const unknown = await svc.ts.store.db.selectFrom('audit_events').select('id').where('kind', '=', 'execution.unknown').execute();
      assert.equal(unknown.length, 0);
    } finally {
      await stopBoth(svc, merchant);
    }
  });
}
