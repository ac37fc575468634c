// A freeze (of the agent or of one that delegated its permit) or a revocation that commits after a decision was planned (permit verified, policy
// evaluated, plan handed to the writer) and before the writer commits it must still deny that
// decision: the frozen state and every commitment of the chain are read inside the decision's own
// commit (services/authorize/recheck.ts, commit.ts, the one-statement form), not at planning. On
// both engines, for the one-statement path (a plain decision) and the transaction path (a budget).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, decide, delegate, issue, newAgent } from '../support/authorize.ts';
import { freezeAgent } from '../../src/services/agents/agents.ts';
import { revokePermit } from '../../src/services/permits/permits.ts';

const PAY = { actions: ['read', 'pay'], resources: ['resource://docs/*', 'resource://shop/*'] };

for (const backend of backends()) {
  describe(`a change committed while a decision is in flight, on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    const authorize = (payload: Record<string, unknown>) => decide(svc, key, payload);

    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
    });
    after(async () => { await svc.stop(); });

    /** Runs `change` once, when the route hands its first authorize unit to the writer, before the writer has it. */
    async function decideAcross(change: () => Promise<unknown>, payload: Record<string, unknown>) {
      const writer = svc.deps.writer;
      const call = writer.call;
      let changed = false;
      writer.call = (async (name: string, args: unknown) => {
        if (name.startsWith('authorize.') && !changed) { changed = true; await change(); }
        return call.call(writer, name as never, args as never);
      }) as typeof writer.call;
      try {
        const decided = await authorize(payload);
        assert.ok(changed, 'the change ran between planning and commit');
        return decided;
      } finally { writer.call = call; }
    }

    for (const path of ['one statement', 'transaction'] as const) {
      const setUp = async () => {
        const agent = newAgent();
        const permit = await issue(svc, agent.did, path === 'transaction' ? { ...PAY, budget: { minor: 10_000, currency: 'EUR' } } : PAY);
        const payload = path === 'transaction'
          ? { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } }
          : { agent: agent.did, permit: permit.jws, action: 'read', resource: 'resource://docs/a' };
        // The first decision warms the key, permit and agent caches, as a busy agent's would be.
        assert.equal((await authorize(payload)).decision, 'ALLOW');
        return { agent, permit, payload };
      };

      test(`${path}: a freeze denies the decision in flight, and it spends nothing`, async () => {
        const { agent, permit, payload } = await setUp();
        const decided = await decideAcross(() => svc.ts.store.transaction((trx) =>
          freezeAgent(trx, { projectId: svc.projectId, did: agent.did, actor: 'system', reason: 'race', at: new Date().toISOString() })), payload);
        assert.equal(decided.decision, 'DENY', JSON.stringify(decided));
        assert.equal(decided.reason_code, 'agent_frozen');
        if (path === 'transaction') {
          const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', permit.commitment).executeTakeFirstOrThrow();
          assert.deepEqual([usage.spent_minor, usage.uses], [100, 1], 'only the warm-up spent');
        }
      });

      if (path === 'transaction') {
        test('a freeze of the agent that delegated the permit denies its delegate\'s decision in flight, and it spends nothing', async () => {
          const { agent, permit } = await setUp();
          const delegate_ = newAgent();
          const chain = await delegate(permit.jws, agent, delegate_.did, { ...PAY, budget: { minor: 1_000, currency: 'EUR' } });
          const payload = { agent: delegate_.did, permit: chain, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } };
          assert.equal((await authorize(payload)).decision, 'ALLOW');
          const decided = await decideAcross(() => svc.ts.store.transaction((trx) =>
            freezeAgent(trx, { projectId: svc.projectId, did: agent.did, actor: 'system', reason: 'race', at: new Date().toISOString() })), payload);
          assert.equal(decided.decision, 'DENY', JSON.stringify(decided));
          assert.equal(decided.reason_code, 'agent_frozen');
          assert.match(decided.detail ?? '', new RegExp(`delegated by ${agent.did}`));
          const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', permit.commitment).executeTakeFirstOrThrow();
          assert.deepEqual([usage.spent_minor, usage.uses], [200, 2], 'only the two warm-ups spent');
        });
      }

      test(`${path}: a revocation denies the decision in flight`, async () => {
        const { permit, payload } = await setUp();
        const decided = await decideAcross(() => svc.ts.store.transaction((trx) =>
          revokePermit(trx, { projectId: svc.projectId, commitment: permit.commitment, actor: 'system', now: new Date() })), payload);
        assert.equal(decided.decision, 'DENY', JSON.stringify(decided));
        assert.equal(decided.reason_code, 'permit_invalid');
        assert.match(decided.detail ?? '', /^revoked:/);
      });
    }
  });
}
