// The SQLite writer's decision checks, found once per batch (services/authorize/one-statement.ts,
// decision 0020): prepared decisions of one batch share what the checks found, a freeze committed
// between batches is seen by the next one, and a unit that is not a prepared decision (which may
// create the agent) makes the rest of its batch check afresh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { openStore } from '../../src/store/store.ts';
import { writerBatches } from '../../src/services/writer/batches.ts';
import { atomicProcedures, procedures } from '../../src/services/writer/procedures.ts';
import { prepareDecision, type PreparedDecision } from '../../src/services/authorize/one-statement.ts';
import type { DecisionPlan } from '../../src/services/authorize/commit.ts';
import type { DecisionRecord } from '../../src/services/authorize/authorize.ts';
import { freezeAgent } from '../../src/services/agents/agents.ts';
import { revokePermit } from '../../src/services/permits/permits.ts';
import { readEpoch } from '../../src/store/read-epoch.ts';

/**
 * A service on SQLite, an active policy, and a writer of the test's own on the service's file, as
 * the writer thread opens it: plans for prepared decisions (checks assumed to pass) and ways to run
 * them and any other unit as that thread does.
 */
async function withWriter(body: (w: {
  svc: TestService;
  planFor: (agent: string, commitment: string, requestId: string, epoch: number) => DecisionPlan;
  runPrepared: (plan: DecisionPlan) => Promise<boolean>;
  runCommit: (plan: DecisionPlan) => Promise<DecisionRecord>;
}) => Promise<void>): Promise<void> {
  const svc = await startService(backends().find((b) => b.name === 'sqlite')!);
  const store = openStore({ kind: 'sqlite', file: join(svc.ts.dataDir, 'gavel.db'), durability: 'caller', reader: false });
  try {
    const version = await activatePolicy(svc, ALLOW_PAYMENTS);
    const batches = writerBatches(store);
    const { keyId } = await svc.member([]);
    const planFor = (agent: string, commitment: string, requestId: string, epoch: number): DecisionPlan => ({
      projectId: svc.projectId, actor: keyId, requestId, at: new Date().toISOString(),
      input: { agent, action: 'read', resource: `resource://docs/${requestId}` }, failure: null,
      permit: { commitment, chain: [commitment], delegation_depth: 0, delegators: [], counters: [] },
      policy: { decision: 'ALLOW', reason_code: 'rule_allow', matched_rules: ['read-docs'] }, policyVersion: version, epoch,
    });
    const runPrepared = (plan: DecisionPlan) => {
      const p: PreparedDecision = prepareDecision(plan)!.statement;
      return batches.run((trx, env) => procedures['authorize.commitPrepared'](trx, p, env), (trx, env) => atomicProcedures['authorize.commitPrepared']!(trx, p, env), true);
    };
    const runCommit = (plan: DecisionPlan) => batches.run((trx, env) => procedures['authorize.commit'](trx, plan, env));
    await body({ svc, planFor, runPrepared, runCommit });
  } finally {
    await store.close();
    await svc.stop();
  }
}

/** The request ids of the decisions written that match `pattern`. */
async function written(svc: TestService, pattern: RegExp): Promise<string[]> {
  const events = await svc.ts.store.db.selectFrom('audit_events').select(['data']).where('kind', '=', 'decision').execute();
  return events.map((e) => (JSON.parse(e.data) as { request_id: string }).request_id).filter((r) => pattern.test(r));
}

test('decision checks: shared within a batch, dropped between batches and by any other unit', () => withWriter(async ({ svc, planFor, runPrepared, runCommit }) => {
  const epoch = (await readEpoch(svc.ts.store))!;
  const plan = (agent: string, commitment: string, i: number) => planFor(agent, commitment, `req_checks_${i}`, epoch);
  // A new agent: its first prepared decision finds no agent row; the transaction creates it; the
  // next prepared decision of the same batch checks afresh and is inserted.
  const { commitment } = await issue(svc, newAgent().did, { actions: ['read'], resources: ['resource://docs/*'] });
  const agent = newAgent(); // no row yet (the plans are built as if its checks had passed)
  const first = await Promise.all([runPrepared(plan(agent.did, commitment, 1)), runCommit(plan(agent.did, commitment, 2)), runPrepared(plan(agent.did, commitment, 3))]);
  assert.equal(first[0], false, 'no agent row yet: nothing written');
  assert.equal(first[1].decision, 'ALLOW', 'the transaction created the agent and decided');
  assert.equal(first[2], true, 'after another unit, the checks ran again and found the agent');

  // Several prepared decisions of one batch: all inserted, each its own event.
  const many = await Promise.all([4, 5, 6, 7].map((i) => runPrepared(plan(agent.did, commitment, i))));
  assert.deepEqual(many, [true, true, true, true]);

  // A freeze committed by another connection between two batches: the next batch sees it.
  await svc.ts.store.transaction((trx) => freezeAgent(trx, { projectId: svc.projectId, did: agent.did, actor: 'system', reason: null, at: new Date().toISOString() }));
  const epochNow = (await readEpoch(svc.ts.store))!;
  const afterFreeze = await Promise.all([8, 9].map((i) => runPrepared({ ...plan(agent.did, commitment, i), epoch: epochNow })));
  assert.deepEqual(afterFreeze, [false, false], 'frozen: nothing written');

  assert.deepEqual((await written(svc, /^req_checks_/)).sort(), ['req_checks_2', 'req_checks_3', 'req_checks_4', 'req_checks_5', 'req_checks_6', 'req_checks_7'], 'exactly the decisions answered true (and the transaction\'s) were written');
}));

test('decision checks: within a batch, what one decision\'s checks found never stands for another read tag, agent or chain', () => withWriter(async ({ svc, planFor, runPrepared, runCommit }) => {
  const grant = { actions: ['read'], resources: ['resource://docs/*'] };
  const [good, revoked] = [await issue(svc, newAgent().did, grant), await issue(svc, newAgent().did, grant)];
  const [active, frozen] = [newAgent(), newAgent()];
  // Both agents get their rows (the transaction creates them); then one is frozen and one permit revoked.
  let epoch = (await readEpoch(svc.ts.store))!;
  for (const agent of [active, frozen]) assert.equal((await runCommit(planFor(agent.did, good.commitment, 'req_tags_0', epoch))).decision, 'ALLOW');
  await svc.ts.store.transaction((trx) => freezeAgent(trx, { projectId: svc.projectId, did: frozen.did, actor: 'system', reason: null, at: new Date().toISOString() }));
  await svc.ts.store.transaction((trx) => revokePermit(trx, { projectId: svc.projectId, commitment: revoked.commitment, actor: 'system', now: new Date() }));
  epoch = (await readEpoch(svc.ts.store))!;
  // Each pair shares one batch; its first decision passes its checks, its second must make its own.
  const pairs: [string, DecisionPlan][] = [
    ['another chain, revoked', planFor(active.did, revoked.commitment, 'req_tags_11', epoch)],
    ['another agent, frozen', planFor(frozen.did, good.commitment, 'req_tags_12', epoch)],
    ['another read tag, stale', planFor(active.did, good.commitment, 'req_tags_13', epoch - 1)],
  ];
  for (const [what, second] of pairs) {
    const answers = await Promise.all([runPrepared(planFor(active.did, good.commitment, 'req_tags_10', epoch)), runPrepared(second)]);
    assert.deepEqual(answers, [true, false], what);
  }
  assert.deepEqual(await written(svc, /^req_tags_1\d$/), ['req_tags_10', 'req_tags_10', 'req_tags_10'], 'only the decisions whose own checks held were written');
}));
