// An operation configured with where its payload carries the amount (decision 0406) is called only
// with the amount the decision checks and spends; anything else is refused before any decision:
// nothing recorded, nothing spent, no call. Operations without the setting are unchanged.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startPayments, type Payments } from '../support/payments.ts';
import { issue } from '../support/authorize.ts';
import { recordedDecisions } from '../support/decisions.ts';

const OPERATIONS = {
  charge: { method: 'POST', path: '/ok', amount: { minor: '/amount', currency: '/currency' } },
  charge_eur: { method: 'POST', path: '/ok', amount: { minor: '/total/minor', currency: 'EUR' } },
};
const eur = (minor: number) => ({ minor, currency: 'EUR' });

for (const backend of backends()) {
  describe(`amount bound to the payload on ${backend.name}`, () => {
    let p: Payments;
    let budget: { jws: string; commitment: string };
    before(async () => {
      p = await startPayments(backend, { actions: ['pay'], resources: ['resource://shop/*'] }, { operations: OPERATIONS });
      budget = await issue(p.svc, p.agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: eur(1_000) });
    });
    after(() => p.stop());

    const pay = (operation: string, payload: Record<string, unknown>, nonce: string, amount: unknown = eur(100)) => p.svc.app.inject({
      method: 'POST', url: '/v1/authorize', headers: p.key,
      payload: { agent: p.agent.did, permit: budget.jws, action: 'pay', resource: 'resource://shop/1', ...(amount ? { amount } : {}),
        execution: { merchant: 'shop', operation, payload, nonce } },
    });
    const spent = async () => Number((await p.svc.ts.store.db.selectFrom('permit_usage').select('spent_minor').where('commitment', '=', budget.commitment).executeTakeFirst())?.spent_minor ?? 0);
    const executions = async () => Number((await p.svc.ts.store.db.selectFrom('executions').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    /** What is recorded and spent, to compare before and after a refusal. */
    const state = async () => ({ decisions: (await recordedDecisions(p.svc.ts.store.db)).length, executions: await executions(), spent: await spent(), calls: p.merchant.totalCalls() });

    test('a payload asking for more than the amount authorized is refused before any decision; nothing recorded, spent or called', async () => {
      const before = await state();
      const nonce = randomUUID();
      const cases: [string, Record<string, unknown>, unknown, { pointer: string; code: string; message: RegExp }[]][] = [
        ['charge', { amount: 1_000_000, currency: 'EUR' }, eur(100), [{ pointer: '/execution/payload/amount', code: 'amount_mismatch', message: /^is 1000000, but amount\.minor is 100: / }]],
        ['charge', { amount: '100', currency: 'USD' }, eur(100), [
          { pointer: '/execution/payload/amount', code: 'amount_mismatch', message: /^is a string, but amount\.minor is 100: / },
          { pointer: '/execution/payload/currency', code: 'amount_mismatch', message: /^is "USD", but amount\.currency is "EUR"/ }]],
        ['charge_eur', { total: { minor: 100 } }, { minor: 100, currency: 'USD' }, [{ pointer: '/amount/currency', code: 'amount_mismatch', message: /charges in EUR$/ }]],
        ['charge_eur', { total: { minor: 99 } }, eur(100), [{ pointer: '/execution/payload/total/minor', code: 'amount_mismatch', message: /^is 99, but amount\.minor is 100/ }]],
      ];
      for (const [operation, payload, amount, errors] of cases) {
        const res = await pay(operation, payload, nonce, amount);
        assert.equal(res.statusCode, 400, res.body);
        const body = res.json();
        assert.equal(body.code, 'invalid_request');
        assert.deepEqual(body.errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]), errors.map((e) => [e.pointer, e.code]), res.body);
        errors.forEach((e, i) => assert.match(body.errors[i].message, e.message));
      }
      assert.deepEqual(await state(), before);
      // The nonce was not burned: the same one with the amount authorized is allowed and called.
      const ok = await pay('charge', { amount: 100, currency: 'EUR' }, nonce);
      assert.equal(ok.json().decision, 'ALLOW', ok.body);
    });

    test('a payload asking for the amount authorized is allowed, spends it, and the merchant receives it', async () => {
      const before = await spent();
      for (const [operation, payload] of [['charge', { currency: 'EUR', order: 'o-1', amount: 100 }], ['charge_eur', { total: { minor: 100 }, order: 'o-2' }]] as const) {
        const nonce = randomUUID();
        const res = await pay(operation, payload, nonce);
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual([res.json().decision, res.json().execution.status], ['ALLOW', 'SUCCEEDED']);
        assert.deepEqual(p.merchant.bodies.get(nonce), payload);
      }
      assert.equal(await spent(), before + 200);
    });

    test('without amount, or without the amount in the payload, such an operation is refused by pointer', async () => {
      const before = await state();
      const missing = await pay('charge', { amount: 100, currency: 'EUR' }, randomUUID(), null);
      assert.equal(missing.statusCode, 400, missing.body);
      assert.deepEqual(missing.json().errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]), [['/amount', 'required']]);
      assert.match(missing.json().errors[0].message, /operation "charge" of merchant "shop" charges the amount its payload carries at \/amount/);
      const absent = await pay('charge', { order: 'o-3' }, randomUUID());
      assert.equal(absent.statusCode, 400, absent.body);
      assert.deepEqual(absent.json().errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]),
        [['/execution/payload/amount', 'required'], ['/execution/payload/currency', 'required']]);
      assert.deepEqual(await state(), before);
    });

    test('an operation without the setting is unchanged: its payload is not read for an amount', async () => {
      const nonce = randomUUID();
      const res = await pay('ok', { amount: 1_000_000, currency: 'EUR' }, nonce);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().decision, 'ALLOW');
      assert.equal(p.merchant.calls.get(nonce), 1);
    });
  });
}
