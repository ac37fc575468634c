// The SQLite writer's decision checks, found once per batch (services/authorize/one-statement.ts,
// decision 0020): prepared decisions of one batch share what the checks found, a freeze committed
// between batches is seen by the next one, and a unit that is not a prepared decision (which may
// create the agent) makes the rest of its batch check afresh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { openStore } from '../../src/store/store.ts';
import { writerBatches } from '../../src/services/writer/batches.ts';
import { atomicProcedures, procedures } from '../../src/services/writer/procedures.ts';
import { prepareDecision, type PreparedDecision } from '../../src/services/authorize/one-statement.ts';
import type { DecisionPlan } from '../../src/services/authorize/commit.ts';
import { freezeAgent } from '../../src/services/agents/agents.ts';
import { readEpoch } from '../../src/store/read-epoch.ts';

test('decision checks: shared within a batch, dropped between batches and by any other unit', async () => {
  const svc = await startService(backends().find((b) => b.name === 'sqlite')!);
  // A writer of this test's own on the service's file, as the writer thread opens it.
  const store = openStore({ kind: 'sqlite', file: join(svc.ts.dataDir, 'gavel.db'), durability: 'caller', reader: false });
  try {
    const version = await activatePolicy(svc, ALLOW_PAYMENTS);
    const batches = writerBatches(store);
    const { keyId } = await svc.member([]);
    const epoch = (await readEpoch(svc.ts.store))!;
    const planFor = (agent: string, commitment: string, i: number): DecisionPlan => ({
      projectId: svc.projectId, actor: keyId, requestId: `req_checks_${i}`, at: new Date().toISOString(),
      input: { agent, action: 'read', resource: `resource://docs/${i}` }, failure: null,
      permit: { commitment, chain: [commitment], delegation_depth: 0, delegators: [], counters: [] },
      policy: { decision: 'ALLOW', reason_code: 'rule_allow', matched_rules: ['read-docs'] }, policyVersion: version, epoch,
    });
    const prepared = (plan: DecisionPlan): PreparedDecision => prepareDecision(plan)!.statement;
    // As the writer thread runs a prepared decision, and any other unit.
    const runPrepared = (p: PreparedDecision) => batches.run((trx, env) => procedures['authorize.commitPrepared'](trx, p, env), (trx, env) => atomicProcedures['authorize.commitPrepared']!(trx, p, env), true);
    const runCommit = (plan: DecisionPlan) => batches.run((trx, env) => procedures['authorize.commit'](trx, plan, env));

    // A new agent: its first prepared decision finds no agent row; the transaction creates it; the
    // next prepared decision of the same batch checks afresh and is inserted.
    const { commitment } = await issue(svc, newAgent().did, { actions: ['read'], resources: ['resource://docs/*'] });
    const agent = newAgent(); // no row yet (the plans are built as if its checks had passed)
    const first = await Promise.all([runPrepared(prepared(planFor(agent.did, commitment, 1))), runCommit(planFor(agent.did, commitment, 2)), runPrepared(prepared(planFor(agent.did, commitment, 3)))]);
    assert.equal(first[0], false, 'no agent row yet: nothing written');
    assert.equal(first[1].decision, 'ALLOW', 'the transaction created the agent and decided');
    assert.equal(first[2], true, 'after another unit, the checks ran again and found the agent');

    // Several prepared decisions of one batch: all inserted, each its own event.
    const many = await Promise.all([4, 5, 6, 7].map((i) => runPrepared(prepared(planFor(agent.did, commitment, i)))));
    assert.deepEqual(many, [true, true, true, true]);

    // A freeze committed by another connection between two batches: the next batch sees it.
    await svc.ts.store.transaction((trx) => freezeAgent(trx, { projectId: svc.projectId, did: agent.did, actor: 'system', reason: null, at: new Date().toISOString() }));
    const epochNow = (await readEpoch(svc.ts.store))!;
    const afterFreeze = await Promise.all([8, 9].map((i) => runPrepared(prepared({ ...planFor(agent.did, commitment, i), epoch: epochNow }))));
    assert.deepEqual(afterFreeze, [false, false], 'frozen: nothing written');

    const events = await svc.ts.store.db.selectFrom('audit_events').select(['data']).where('kind', '=', 'decision').execute();
    const requests = events.map((e) => (JSON.parse(e.data) as { request_id: string }).request_id).filter((r) => r.startsWith('req_checks_')).sort();
    assert.deepEqual(requests, ['req_checks_2', 'req_checks_3', 'req_checks_4', 'req_checks_5', 'req_checks_6', 'req_checks_7'], 'exactly the decisions answered true (and the transaction\'s) were written');
  } finally {
    await store.close();
    await svc.stop();
  }
});
