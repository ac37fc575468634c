// A decision's plan crosses to the SQLite writer thread as JSON text (writer/wire.ts), so every
// member of a real plan, and of a decision prepared for its one statement, must survive JSON
// unchanged: no Date, no bytes, no undefined-vs-missing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { Authorizer } from '../../src/services/authorize/authorize.ts';
import type { DecisionPlan } from '../../src/services/authorize/commit.ts';
import type { PreparedDecision } from '../../src/services/authorize/one-statement.ts';
import type { GavelWriter } from '../../src/services/writer/procedures.ts';

test('a decision plan, with an execution reservation, is plain JSON', async () => {
  const svc = await startService(backends().find((b) => b.name === 'sqlite')!);
  try {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const agent = newAgent();
    const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 10_000, currency: 'EUR' } });
    const plans: DecisionPlan[] = [];
    const prepared: PreparedDecision[] = [];
    const writer = {
      call: async (name: string, args: DecisionPlan & PreparedDecision) => { (name === 'authorize.commitPrepared' ? prepared : plans).push(args); return true; },
    } as unknown as GavelWriter;
    const authorizer = new Authorizer({ store: svc.ts.store, signer: svc.deps.signer, writer });
    const ctx = { projectId: svc.projectId, actor: 'key_x', requestId: 'req_x', now: new Date() };
    const input = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' }, intent: 'buy' };
    await authorizer.decide(ctx, input, { executionId: 'exe_x', instanceId: 'i', nonce: 'n', fingerprint: 'f', merchant: 'm', operation: 'o', agent: agent.did, action: 'pay', resource: 'resource://shop/1' });
    await authorizer.decide(ctx, { ...input, permit: `${jws}x` }); // a failed permit check travels too
    // Planned under a cached key context: its one statement is prepared here and crosses instead.
    await authorizer.decide({ ...ctx, epoch: 1 }, { ...input, permit: `${jws}x` });
    assert.equal(plans.length, 2);
    assert.equal(prepared.length, 1);
    for (const plan of plans) assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);
    assert.deepEqual(JSON.parse(JSON.stringify(prepared[0])), prepared[0], 'a prepared decision is plain JSON too');
    assert.ok(plans[0]!.permit!.counters.length > 0, 'the budget counter is part of the plan');
    assert.ok(plans[1]!.failure, 'the failure is part of the plan');
  } finally { await svc.stop(); }
});
