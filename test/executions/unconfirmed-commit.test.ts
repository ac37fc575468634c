// A decision's commit whose answer is lost with the database connection (COMMIT sent, the reply
// never read) leaves the caller not knowing whether the reservation landed. The service never
// called the merchant, so a reservation that did land is settled FAILED ("not delivered") at once;
// left IN_FLIGHT, every repeat of the nonce was 409 execution_in_progress until the sweep took it,
// after the merchant timeout and a minute, for a call that may have acted (UNKNOWN, for a person).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startPayments, type Payments } from '../support/payments.ts';
import { Executions, UNSENT_NOTE } from '../../src/services/executions/executions.ts';
import type { Authorizer } from '../../src/services/authorize/authorize.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 10_000, currency: 'EUR' } };
const lostConnection = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });

for (const backend of backends()) {
  describe(`an execution whose decision's commit went unconfirmed (${backend.name})`, () => {
    let p: Payments;
    /** What the next decision does: commits and then loses its answer, fails before committing, or runs. */
    let mode: 'commit-then-lose' | 'lose-before-commit' | 'run' = 'run';
    before(async () => {
      p = await startPayments(backend, PAY, { timeoutMs: 5_000 });
      const authorizer = p.svc.deps.authorizer as Authorizer;
      const decide = authorizer.decide.bind(authorizer);
      authorizer.decide = async (...args: Parameters<Authorizer['decide']>) => {
        const now = mode;
        mode = 'run';
        if (now === 'lose-before-commit') throw lostConnection();
        const record = await decide(...args);
        if (now === 'commit-then-lose') throw lostConnection();
        return record;
      };
    });
    after(() => p.stop());

    const pay = (nonce: string) => p.svc.app.inject({
      method: 'POST', url: '/v1/authorize', headers: p.key,
      payload: { agent: p.agent.did, permit: p.permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' },
        execution: { merchant: 'shop', operation: 'ok', payload: { order: 'o-1' }, nonce } },
    });
    const byNonce = (nonce: string) => p.svc.ts.store.db.selectFrom('executions').selectAll().where('nonce', '=', nonce).executeTakeFirst();

    test('committed: 503 to the caller, the reservation settled FAILED with its audit event, no call; a repeat replays FAILED', async () => {
      const nonce = randomUUID();
      mode = 'commit-then-lose';
      const res = await pay(nonce);
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().code, 'database_unavailable');
      // Settled in the background, so that the 503 does not wait on a database that may be away.
      let row = await byNonce(nonce);
      for (let i = 0; i < 100 && row?.status === 'IN_FLIGHT'; i++) row = await new Promise((r) => setTimeout(r, 20)).then(() => byNonce(nonce));
      assert.ok(row, 'the reservation committed');
      assert.equal(row.status, 'FAILED');
      assert.equal(row.note, UNSENT_NOTE);
      assert.equal(row.http_status, null);
      assert.ok(row.completed_at);
      const events = await p.svc.ts.store.db.selectFrom('audit_events').select(['kind', 'data']).where('data', 'like', `%${row.id}%`).execute();
      assert.deepEqual(events.map((e) => e.kind).sort(), ['execution.outcome', 'execution.started']);
      const outcome = JSON.parse(events.find((e) => e.kind === 'execution.outcome')!.data);
      assert.equal(outcome.status, 'FAILED');
      assert.equal(outcome.note, UNSENT_NOTE);
      assert.equal(p.merchant.calls.get(nonce) ?? 0, 0, 'the merchant was never called');

      const again = await pay(nonce);
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(again.json().decision, 'REPLAY');
      assert.deepEqual(again.json().execution, { id: row.id, status: 'FAILED' });
      assert.equal(p.merchant.calls.get(nonce) ?? 0, 0, 'nor by the repeat');
    });

    test('committed while the database stays away: the 503 does not wait out the retries, and the row is left in flight for the sweep', async () => {
      const nonce = randomUUID();
      const { deps } = p.svc;
      let attempts = 0;
      const away = new Proxy(deps.writer, {
        get: (target, prop, receiver) => (prop === 'call'
          ? (name: string, args: unknown) => (name === 'executions.record' ? (attempts++, Promise.reject(lostConnection())) : target.call(name as never, args as never))
          : Reflect.get(target, prop, receiver)),
      });
      const configured = deps.executions;
      (deps as { executions: unknown }).executions = new Executions({ store: p.svc.ts.store, writer: away, merchants: deps.merchants, instanceId: configured.instanceId, now: () => new Date() });
      try {
        mode = 'commit-then-lose';
        const res = await pay(nonce);
        assert.equal(res.statusCode, 503, res.body);
        const answeredAfter = attempts;
        // Wait until the retries have ended: no new attempt for longer than the longest pause between two.
        for (let seen = -1; seen !== attempts;) { seen = attempts; await new Promise((r) => setTimeout(r, 2_500)); }
        assert.ok(answeredAfter < attempts, `the caller was answered after ${answeredAfter} of ${attempts} attempts to settle the row`);
        assert.equal((await byNonce(nonce))?.status, 'IN_FLIGHT');
        assert.equal(p.merchant.calls.get(nonce) ?? 0, 0);
      } finally { (deps as { executions: unknown }).executions = configured; }
    });

    test('not committed: 503, nothing recorded for the nonce; a repeat decides afresh and calls once', async () => {
      const nonce = randomUUID();
      mode = 'lose-before-commit';
      const res = await pay(nonce);
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(await byNonce(nonce), undefined);
      const again = await pay(nonce);
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(again.json().decision, 'ALLOW');
      assert.equal(again.json().execution.status, 'SUCCEEDED');
      assert.equal(p.merchant.calls.get(nonce), 1);
    });
  });
}
