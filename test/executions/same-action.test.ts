// "The same action" a nonce binds (docs/executions.md, decision 0400), and what its caller is told,
// checked where a mutation audit (session 33) found nothing pinned: every part of the fingerprint
// but the permit, the fingerprint check of a request that lost the reservation race, and the
// replay's audit event.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startPayments, stopBoth } from '../support/payments.ts';
import { type TestService } from '../support/service.ts';
import { issue, newAgent, type Agent } from '../support/authorize.ts';
import { type TestMerchant } from '../support/merchant.ts';
import { actionFingerprint } from '../../src/services/executions/fingerprint.ts';

const PAY = { actions: ['pay', 'read'], resources: ['resource://shop/*'] };

test('the fingerprint is SHA-256 of the documented RFC 8785 form, absent amount and intent as null: executions recorded before an upgrade still match their repeats', () => {
  const fingerprint = actionFingerprint({ agent: 'did:key:z6Mk1', action: 'pay', resource: 'resource://shop/1', merchant: 'shop', operation: 'ok', payload: { b: 1, a: [1.5, 'x'] } });
  const canonical = '{"action":"pay","agent":"did:key:z6Mk1","amount":null,"intent":null,"merchant":"shop","operation":"ok","payload":{"a":[1.5,"x"],"b":1},"resource":"resource://shop/1"}';
  assert.equal(fingerprint, createHash('sha256').update(canonical).digest('hex'));
});

for (const backend of backends()) {
  describe(`the same action on ${backend.name}`, () => {
    let svc: TestService;
    let merchant: TestMerchant;
    let key: { authorization: string };
    let agent: Agent;
    let permit: string;
    const authorize = (body: Record<string, unknown>) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body });
    const body = (nonce: string, over: Record<string, unknown> = {}, execution: Record<string, unknown> = {}) => ({
      agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' },
      ...over, execution: { merchant: 'shop', operation: 'ok', payload: { order: 'o-1' }, nonce, ...execution },
    });

    before(async () => {
      ({ svc, merchant, key, agent, permit } = await startPayments(backend, PAY, { slowMs: 300 }));
    });
    after(() => stopBoth(svc, merchant));

    test('a settled nonce sent by another agent, for another action or to another merchant is nonce_reused; under a re-issued permit it is a REPLAY', async () => {
      const nonce = randomUUID();
      const first = (await authorize(body(nonce))).json();
      assert.equal(first.execution?.status, 'SUCCEEDED', JSON.stringify(first));
      const other = newAgent();
      const otherPermit = (await issue(svc, other.did, PAY)).jws;
      for (const [what, request] of [
        ['another agent', body(nonce, { agent: other.did, permit: otherPermit })],
        ['another action', body(nonce, { action: 'read' })],
        ['another merchant with an operation of the same name', body(nonce, {}, { merchant: 'other' })],
      ] as const) {
        const res = await authorize(request);
        assert.equal(res.statusCode, 409, `${what}: ${res.body}`);
        assert.equal(res.json().code, 'nonce_reused', what);
      }
      // The permit is not part of the action: the same call under a permit issued since is its repeat.
      const reissued = (await issue(svc, agent.did, PAY)).jws;
      const again = (await authorize(body(nonce, { permit: reissued }))).json();
      assert.equal(again.decision, 'REPLAY', JSON.stringify(again));
      assert.deepEqual(again.execution, first.execution);
      assert.equal(merchant.calls.get(nonce), 1);
      // The replay's audit event names the execution it replayed.
      const event = await svc.ts.store.db.selectFrom('audit_events').select(['kind', 'data']).where('id', '=', again.audit_id).executeTakeFirstOrThrow();
      assert.equal(event.kind, 'execution.replay');
      assert.equal(JSON.parse(event.data).execution_id, first.execution.id);
    });

    test('concurrent requests naming one nonce with two payloads: one call; those of the other payload are nonce_reused, never told it is in progress', async () => {
      const nonce = randomUUID();
      const payloads = [{ order: 'a' }, { order: 'b' }];
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => authorize(body(nonce, {}, { operation: 'slow', payload: payloads[i % 2] }))
        .then((res) => ({ res, payload: payloads[i % 2]! }))));
      const allows = results.filter(({ res }) => res.statusCode === 200 && res.json().decision === 'ALLOW');
      assert.equal(allows.length, 1, results.map(({ res }) => res.body).slice(0, 3).join('\n'));
      const winner = allows[0]!.payload;
      assert.deepEqual(merchant.bodies.get(nonce), winner);
      for (const { res, payload } of results) {
        if (res === allows[0]!.res) continue;
        if (payload === winner) {
          const ok = (res.statusCode === 409 && res.json().code === 'execution_in_progress') || (res.statusCode === 200 && res.json().decision === 'REPLAY');
          assert.ok(ok, `the winner's payload: ${res.statusCode} ${res.body}`);
        } else {
          assert.equal(res.statusCode, 409, `another payload: ${res.body}`);
          assert.equal(res.json().code, 'nonce_reused', `another payload: ${res.body}`);
        }
      }
      assert.equal(merchant.calls.get(nonce), 1);
    });

    test('concurrent repeats of one nonce under a one-use permit: the use the first spent does not make the others a DENY; they are its repeats', async () => {
      const a = newAgent();
      const one = (await issue(svc, a.did, { ...PAY, max_uses: 1 } as never)).jws;
      const nonce = randomUUID();
      const request = body(nonce, { agent: a.did, permit: one }, { operation: 'slow' });
      const results = await Promise.all(Array.from({ length: 30 }, () => authorize(request)));
      const allows = results.filter((res) => res.statusCode === 200 && res.json().decision === 'ALLOW');
      assert.equal(allows.length, 1, results.map((res) => res.body).slice(0, 3).join('\n'));
      for (const res of results) {
        if (res === allows[0]) continue;
        // A DENY would tell the caller nothing was called (spec 2.4) of an action that was.
        const repeat = (res.statusCode === 409 && res.json().code === 'execution_in_progress') || (res.statusCode === 200 && res.json().decision === 'REPLAY');
        assert.ok(repeat, `a repeat of the nonce: ${res.statusCode} ${res.body}`);
      }
      assert.equal(merchant.calls.get(nonce), 1);
      // One decision is recorded for the nonce: the ALLOW that made the call.
      const decisions = (await svc.ts.store.db.selectFrom('audit_events').select('data').where('kind', '=', 'decision').execute())
        .map((e) => JSON.parse(e.data)).filter((d) => d.execution?.nonce === nonce);
      assert.deepEqual(decisions.map((d) => d.decision), ['ALLOW']);
    });
  });
}
