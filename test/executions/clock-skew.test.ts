// Two instances on one PostgreSQL database whose clocks differ by more than a heartbeat's staleness
// (STALE_AFTER_MS): each one's sweep must still find the other alive, so a call the other is making
// is never marked UNKNOWN under it. Heartbeats are written and judged by the database's clock
// (services/executions/recovery.ts); judged by each instance's own, the one ahead took the other for
// dead every time it swept. A starting instance judges others only once it has beaten for a
// staleness window (decision 0401, addendum), longer than the call here lasts, so the test also
// runs a judging sweep as the instance ahead while the call is out (a mutation audit, session 33,
// found that the test no longer reached the judgement it was written for).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { checkedService, startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { merchantsFile, startMerchant } from '../support/merchant.ts';
import { stopBoth } from '../support/payments.ts';
import { loadConfig } from '../../src/config/config.ts';
import { HEARTBEAT_MS, STALE_AFTER_MS, sweepInFlight } from '../../src/services/executions/recovery.ts';

for (const backend of backends().filter((b) => b.name === 'postgres')) {
  test('a call in flight on one instance is not marked UNKNOWN by another whose clock runs ahead (postgres)', async () => {
    // The merchant answers after two heartbeats, so the other instance sweeps while the call is out.
    const merchant = await startMerchant({ slowMs: HEARTBEAT_MS * 2 + 500 });
    const file = merchantsFile(merchant.url, 20_000);
    const a = await startService(backend, { merchantsFile: file });
    const ahead = STALE_AFTER_MS + 5_000;
    const b = await checkedService(loadConfig({}, { dataDir: a.ts.dataDir, logLevel: 'silent', merchantsFile: file }),
      { store: a.ts.reopen(), logger: false, clock: { now: () => new Date(Date.now() + ahead) } });
    try {
      await activatePolicy(a, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(a, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const pending = a.app.inject({
        method: 'POST', url: '/v1/authorize', headers: await a.keyHeader([]),
        payload: { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' }, execution: { merchant: 'shop', operation: 'slow', payload: {}, nonce: randomUUID() } },
      });
      await merchant.waitForCalls(1);
      const bNow = new Date(Date.now() + ahead);
      assert.equal(await sweepInFlight(a.ts.store, { instanceId: b.deps.executions.instanceId, now: bNow, maxTimeoutMs: 20_000, startup: false }), 0, 'the instance ahead, judging, finds the other alive');
      const res = await pending;
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().execution.status, 'SUCCEEDED', 'the other instance left the call alone');
      const unknown = await a.ts.store.db.selectFrom('audit_events').select('id').where('kind', '=', 'execution.unknown').execute();
      assert.equal(unknown.length, 0, 'no execution was taken for a dead instance\'s');
      assert.equal(merchant.totalCalls(), 1);
    } finally {
      await b.close();
      await stopBoth(a, merchant);
    }
  });
}
