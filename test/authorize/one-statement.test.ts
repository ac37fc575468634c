// The one-statement commit (services/authorize/one-statement.ts, decision 0012), on both engines:
// it writes exactly the event the transaction would, writes nothing when any check under the commit
// differs, and takes only decisions whose transaction would write nothing else.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import canonicalize from 'canonicalize';
import { leafHashOfStoredEvent } from '../../src/domain/auditlog/leaf.ts';
import { readNodes } from '../../src/services/auditlog/log.ts';
import { commitPrepared, prepareDecision, sharedStatementOf } from '../../src/services/authorize/one-statement.ts';
import { commitDecision, type DecisionPlan } from '../../src/services/authorize/commit.ts';
import { freezeAgent } from '../../src/services/agents/agents.ts';
import { revokePermit } from '../../src/services/permits/permits.ts';
import { CHECKED_AT_COMMIT, readEpoch } from '../../src/store/read-epoch.ts';
import type { SqlTarget } from '../../src/store/fixed-sql.ts';
import type { Db, Tx } from '../../src/store/store.ts';
import type { DecisionRecord } from '../../src/services/authorize/authorize.ts';

/** Whether the plan's transaction would write nothing but its audit event: then it has a one statement. */
const oneStatementEligible = (plan: DecisionPlan): boolean => prepareDecision(plan) !== undefined;

/** A plan's one statement, prepared and run as the Authorizer and the writer do; undefined if it wrote nothing. */
async function commitInOneStatement(db: Db | Tx, env: SqlTarget, plan: DecisionPlan): Promise<DecisionRecord | undefined> {
  const prepared = prepareDecision(plan);
  if (!prepared) return undefined;
  return (await commitPrepared(db, env, prepared.statement)) ? prepared.record : undefined;
}

for (const backend of backends()) {
  describe(`one-statement decisions on ${backend.name}`, () => {
    let svc: TestService;
    before(async () => { svc = await startService(backend); });
    after(async () => { await svc.stop(); });

    const env = (): SqlTarget => ({ dialect: svc.ts.store.dialect, raw: svc.ts.store.raw });
    /** As the writer runs it: SQLite inside a transaction on the writer's connection, PostgreSQL on the pool. */
    const oneStatement = (plan: DecisionPlan): Promise<DecisionRecord | undefined> => (svc.ts.store.dialect === 'sqlite'
      ? svc.ts.store.transaction((trx) => commitInOneStatement(trx, env(), plan))
      : commitInOneStatement(svc.ts.store.db, env(), plan));

    /** A plan as the Authorizer builds it from cached reads, for a decision the permit and policy allow. */
    async function allowPlan(): Promise<DecisionPlan> {
      return planUnder(await activatePolicy(svc, ALLOW_PAYMENTS));
    }
    /** The same, for a new agent, under an active policy version already set. */
    async function planUnder(version: number): Promise<DecisionPlan> {
      const agent = newAgent();
      const { commitment } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const { keyId } = await svc.member([]);
      return {
        projectId: svc.projectId, actor: keyId, requestId: 'req_one_statement', at: new Date().toISOString(),
        input: { agent: agent.did, action: 'read', resource: 'resource://docs/a' }, failure: null,
        permit: { commitment, chain: [commitment], delegation_depth: 0, delegators: [], counters: [] },
        policy: { decision: 'ALLOW', reason_code: 'rule_allow', matched_rules: ['read-docs'] },
        policyVersion: version, epoch: (await readEpoch(svc.ts.store)) ?? CHECKED_AT_COMMIT,
      };
    }
    const decisionEvents = () => svc.ts.store.db.selectFrom('audit_events').select(['id', 'actor', 'data']).where('kind', '=', 'decision').execute();
    /** An event's data without what differs between two decisions of the same plan. */
    const comparable = (data: string) => { const { decision_id: _d, ...rest } = JSON.parse(data) as Record<string, unknown>; return rest; };

    test('it writes the event the transaction writes, and answers the same', async () => {
      const plan = await allowPlan();
      assert.equal(oneStatementEligible(plan), true);
      const one = await oneStatement(plan);
      assert.ok(one, 'an eligible plan whose checks hold commits in one statement');
      assert.equal(one.decision, 'ALLOW');
      const viaTransaction = await svc.ts.store.transaction((trx) => commitDecision(trx, plan, env()));
      const { audit_id: a1, decision_id: d1, ...answer1 } = one;
      const { audit_id: a2, decision_id: d2, ...answer2 } = viaTransaction;
      assert.deepEqual(answer1, answer2);
      assert.notEqual(a1, a2);
      const events = await decisionEvents();
      const e1 = events.find((e) => e.id === a1)!;
      const e2 = events.find((e) => e.id === a2)!;
      assert.deepEqual(comparable(e1.data), comparable(e2.data));
      assert.equal(e1.actor, plan.actor);
      assert.equal(JSON.parse(e1.data).decision_id, d1);
      assert.notEqual(d1, d2);
    });

    test('when a check under the commit differs, it writes nothing', async () => {
      const plan = await allowPlan();
      const before = (await decisionEvents()).length;
      // An agent with no row (the transaction creates it), and cached reads that no longer hold.
      assert.equal(await oneStatement({ ...plan, input: { ...plan.input, agent: newAgent().did } }), undefined, 'an unknown agent');
      if (typeof plan.epoch === 'number') {
        assert.equal(await oneStatement({ ...plan, epoch: plan.epoch - 1 }), undefined, 'a read epoch that moved on');
      } else {
        assert.equal(await oneStatement({ ...plan, policyVersion: plan.policyVersion! + 1 }), undefined, 'a policy pointer that moved on');
        assert.equal(await oneStatement({ ...plan, actor: 'key_00000000000000000000000000' }), undefined, 'a key that does not hold');
      }
      await svc.ts.store.transaction((trx) => revokePermit(trx, { projectId: svc.projectId, commitment: plan.permit!.commitment, actor: 'system', now: new Date() }));
      const revokedNow = await allowPlan(); // the revocation moved the SQLite epoch: plan afresh, same permit
      assert.equal(await oneStatement({ ...revokedNow, input: plan.input, permit: plan.permit }), undefined, 'a revoked permit');
      const frozen = await allowPlan();
      await svc.ts.store.transaction((trx) => freezeAgent(trx, { projectId: svc.projectId, did: frozen.input.agent, actor: 'system', reason: null, at: new Date().toISOString() }));
      assert.equal(await oneStatement({ ...frozen, epoch: (await readEpoch(svc.ts.store)) ?? CHECKED_AT_COMMIT }), undefined, 'a frozen agent');
      assert.equal((await decisionEvents()).length, before);
    });

    test('through the route: the writer runs the statement prepared for it, and the log\'s leaf is the hash of the row it stored', async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const headers = await svc.keyHeader([]);
      const decide = async (i: number) => {
        const res = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers, payload: { agent: agent.did, permit: jws, action: 'read', resource: `resource://docs/${i}` } });
        assert.equal(res.statusCode, 200, res.body);
        return res.json() as { decision: string; reason_code: string; audit_id: string; request_id: string };
      };
      await decide(0); // the key's context is cached from here on
      const writer = svc.deps.writer;
      const call = writer.call.bind(writer);
      const called: string[] = [];
      // Only the authorize procedures: the log's sequencer calls the writer on its own timer.
      writer.call = ((name, args) => { if (name.startsWith('authorize.')) called.push(name); return call(name, args); }) as typeof writer.call;
      const answers: Awaited<ReturnType<typeof decide>>[] = [];
      try {
        for (let i = 1; i <= 3; i++) answers.push(await decide(i));
        assert.ok(answers.every((a) => a.decision === 'ALLOW'));
        assert.deepEqual(called.splice(0), Array(3).fill('authorize.commitPrepared'), 'each decision: the prepared statement alone');
        // Frozen since it was planned: the statement writes nothing and the transaction decides.
        await svc.ts.store.transaction((trx) => freezeAgent(trx, { projectId: svc.projectId, did: agent.did, actor: 'system', reason: null, at: new Date().toISOString() }));
        const frozen = await decide(4);
        assert.equal(frozen.reason_code, 'agent_frozen');
        assert.deepEqual(called, ['authorize.commitPrepared', 'authorize.commit']);
        answers.push(frozen);
      } finally { writer.call = call; }
      await svc.auditLog.tick({ force: true });
      const rows = await svc.ts.store.db.selectFrom('audit_events').selectAll()
        .where('id', 'in', answers.map((a) => a.audit_id)).where('leaf_index', 'is not', null).execute();
      assert.equal(rows.length, 4, 'every answered decision is in the log');
      const nodes = await readNodes(svc.ts.store.db, rows.map((r) => ({ level: 0, index: Number(r.leaf_index) })));
      for (const leaf of rows) {
        const node = nodes.find((n) => n.index === Number(leaf.leaf_index))!;
        assert.equal(Buffer.from(node.hash).toString('hex'), Buffer.from(leafHashOfStoredEvent(leaf)).toString('hex'), `${leaf.id}: the leaf is the hash of the stored row`);
        const answer = answers.find((a) => a.audit_id === leaf.id)!;
        assert.equal(JSON.parse(leaf.data).request_id, answer.request_id, 'the answer is the stored decision\'s');
      }
    });

    if (backend.name === 'postgres') {
      test('decisions submitted together share one statement, each row with its own checks and its exact event', async () => {
        const version = await activatePolicy(svc, ALLOW_PAYMENTS);
        const plans = await Promise.all(Array.from({ length: 8 }, () => planUnder(version)));
        const [good, quoted, unknown, frozen, revoked, staleKey, stalePointer, good2] = plans as [DecisionPlan, ...DecisionPlan[]];
        const intent = 'he said "hi" \\ {a,b} NULL ; ünïcødé 😀';
        await svc.ts.store.transaction((trx) => freezeAgent(trx, { projectId: svc.projectId, did: frozen!.input.agent, actor: 'system', reason: null, at: new Date().toISOString() }));
        await svc.ts.store.transaction((trx) => revokePermit(trx, { projectId: svc.projectId, commitment: revoked!.permit!.commitment, actor: 'system', now: new Date() }));
        const submitted = [
          good, { ...quoted!, input: { ...quoted!.input, intent } }, { ...unknown!, input: { ...unknown!.input, agent: newAgent().did } }, frozen!, revoked!,
          { ...staleKey!, actor: 'key_00000000000000000000000000' }, { ...stalePointer!, policyVersion: version + 1 }, good2!,
        ];
        const shared = sharedStatementOf(svc.ts.store.db);
        const statementsBefore = shared.statements;
        const results = await Promise.all(submitted.map((plan) => commitInOneStatement(svc.ts.store.db, env(), plan)));
        assert.equal(shared.statements - statementsBefore, 1, 'one statement for all eight');
        assert.deepEqual(results.map((r) => r !== undefined), [true, true, false, false, false, false, false, true]);
        const events = await decisionEvents();
        for (const [i, r] of results.entries()) {
          if (!r) continue;
          const event = events.find((e) => e.id === r.audit_id)!;
          assert.ok(event, 'each inserted row is its own plan\'s event');
          assert.equal(event.actor, submitted[i]!.actor);
          assert.equal(event.data, canonicalize(JSON.parse(event.data)), 'stored byte for byte as the canonical text');
          assert.equal(JSON.parse(event.data).agent, submitted[i]!.input.agent);
          assert.equal(JSON.parse(event.data).decision_id, r.decision_id);
          const stored = await svc.ts.store.db.selectFrom('audit_events').selectAll().where('id', '=', r.audit_id).executeTakeFirstOrThrow();
          assert.deepEqual(Buffer.from(stored.leaf_hash!), Buffer.from(leafHashOfStoredEvent(stored)), 'written with the leaf hash of its own text');
        }
        assert.equal(JSON.parse(events.find((e) => e.id === results[1]!.audit_id)!.data).intent, intent);
      });

      test('a row that fails the shared statement fails only its own decision', async () => {
        const version = await activatePolicy(svc, ALLOW_PAYMENTS);
        const [a, b] = [await planUnder(version), await planUnder(version)];
        // A version no integer column holds: PostgreSQL refuses the whole statement for it.
        const broken = { ...(await planUnder(version)), policyVersion: 2 ** 40 };
        const outcomes = await Promise.allSettled([a, broken, b].map((plan) => commitInOneStatement(svc.ts.store.db, env(), plan)));
        assert.equal(outcomes[0]!.status, 'fulfilled');
        assert.ok((outcomes[0] as PromiseFulfilledResult<DecisionRecord | undefined>).value);
        assert.equal(outcomes[1]!.status, 'rejected');
        assert.equal(outcomes[2]!.status, 'fulfilled');
        assert.ok((outcomes[2] as PromiseFulfilledResult<DecisionRecord | undefined>).value);
      });
    }
  });
}

test('only a decision whose transaction would write nothing but its event takes one statement', () => {
  const base: DecisionPlan = {
    projectId: 'prj_x', actor: 'key_x', requestId: 'req_x', at: new Date().toISOString(),
    input: { agent: 'did:key:zx', action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } }, failure: null,
    permit: { commitment: 'c', chain: ['c'], delegation_depth: 0, delegators: [], counters: [] },
    policy: { decision: 'ALLOW', reason_code: 'rule_allow', matched_rules: ['r'] }, policyVersion: 1, epoch: CHECKED_AT_COMMIT,
  };
  const withCounters = { ...base, permit: { ...base.permit!, counters: [{ link: 0, commitment: 'c', budget: { minor: 1_000, currency: 'EUR' } }] } };
  assert.equal(oneStatementEligible(base), true);
  assert.equal(oneStatementEligible({ ...base, epoch: 7 }), true, 'a SQLite plan');
  assert.equal(oneStatementEligible(withCounters), false, 'an ALLOW that spends a budget');
  assert.equal(oneStatementEligible({ ...withCounters, failure: { check: 'expired', detail: 'expired' } }), true, 'a DENY spends nothing');
  assert.equal(oneStatementEligible({ ...base, policy: { decision: 'DENY', reason_code: 'rule_deny', matched_rules: ['r'] } }), true);
  assert.equal(oneStatementEligible({ ...base, policy: { decision: 'REQUIRE_APPROVAL', reason_code: 'rule_requires_approval', matched_rules: ['r'] } }), false, 'an obligation to open or an approval to consume');
  assert.equal(oneStatementEligible({ ...base, execution: { merchant: 'm', operation: 'o', nonce: 'n' } as never }), false, 'an execution to reserve');
  assert.equal(oneStatementEligible({ ...base, epoch: undefined }), false, 'a plan whose key was looked up, not cached');
});
