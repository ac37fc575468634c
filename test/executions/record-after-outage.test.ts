// A merchant answered, and then the database stayed away longer than the caller's few seconds of
// retries (a PostgreSQL restart or failover takes longer). The caller gets 503 as before, but the
// answer is known: it is recorded once the database is back, not left IN_FLIGHT for the sweep to
// mark UNKNOWN, for a person to resolve a call whose outcome this instance knew.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends } from '../support/backends.ts';
import { startPayments, type Payments } from '../support/payments.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };
const lostConnection = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });

for (const backend of backends()) {
  describe(`an outcome the database could not take while the caller waited (${backend.name})`, () => {
    let p: Payments;
    /** How many more attempts to record an outcome fail as a lost connection. */
    let failing = 0;
    before(async () => {
      p = await startPayments(backend, PAY, { timeoutMs: 5_000 });
      const writer = p.svc.deps.writer;
      const call = writer.call.bind(writer) as (...args: unknown[]) => Promise<unknown>;
      (writer as { call: unknown }).call = async (...args: unknown[]) => {
        if (args[0] === 'executions.record' && failing > 0) { failing--; throw lostConnection(); }
        return call(...args);
      };
    });
    after(() => p.stop());

    test('the caller gets 503; the merchant\'s answer is recorded once the database answers again', async () => {
      const nonce = randomUUID();
      // Every attempt while the caller waits (about 6 s), and two more.
      failing = 9;
      const res = await p.svc.app.inject({
        method: 'POST', url: '/v1/authorize', headers: p.key,
        payload: { agent: p.agent.did, permit: p.permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' },
          execution: { merchant: 'shop', operation: 'ok', payload: { order: 'o-1' }, nonce } },
      });
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().code, 'database_unavailable');
      assert.equal(p.merchant.calls.get(nonce), 1);
      const row = () => p.svc.ts.store.db.selectFrom('executions').selectAll().where('nonce', '=', nonce).executeTakeFirstOrThrow();
      for (let i = 0; i < 150 && (await row()).status === 'IN_FLIGHT'; i++) await sleep(100);
      const settled = await row();
      assert.equal(settled.status, 'SUCCEEDED', 'recorded in the background once the database took it');
      assert.equal(settled.http_status, 200);
      assert.equal(failing, 0);
      const kinds = (await p.svc.ts.store.db.selectFrom('audit_events').select('kind').where('data', 'like', `%${settled.id}%`).execute()).map((e) => e.kind).sort();
      assert.deepEqual(kinds, ['execution.outcome', 'execution.started']);
    });
  });
}
