// The inputs the decision hands the policy besides the request (spec 3): request_time from the
// server's clock, delegation_depth and permit_commitment from the verified permit; and the two
// indeterminate reason codes, reached through POST /v1/authorize rather than the evaluator alone.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, decide, delegate, issue, newAgent } from '../support/authorize.ts';
import { recordedDecision } from '../support/decisions.ts';

const ANY = { actions: ['*'], resources: ['resource://*'] };
const eq = (input: string, value: unknown) => ({ op: 'eq', input, value });
const and = (...args: unknown[]) => ({ op: 'and', args });

for (const backend of backends()) {
  describe(`policy inputs through /v1/authorize on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    const authorize = (body: Record<string, unknown>) => decide(svc, key, body);
    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
    });
    after(async () => { await svc.stop(); });

    test('request_time is the server clock, delegation_depth counts links, permit_commitment is the leaf', async () => {
      const holder = newAgent();
      const delegateAgent = newAgent();
      const pinned = newAgent();
      const root = await issue(svc, holder.did, ANY);
      const chain = await delegate(root.jws, holder, delegateAgent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const blocked = await issue(svc, pinned.did, ANY);
      const year = new Date().getUTCFullYear();
      await activatePolicy(svc, {
        spec_version: '1',
        rules: [
          { id: 'read', effect: 'ALLOW', when: eq('action', 'read') },
          { id: 'delegates-may-not-read-deep', effect: 'DENY', when: and(eq('action', 'read'), { op: 'gte', input: 'delegation_depth', value: 1 }, { op: 'matches_resource', input: 'resource', value: 'resource://docs/deep/*' }) },
          { id: 'one-permit-blocked', effect: 'DENY', when: eq('permit_commitment', blocked.commitment) },
          // True only with the server's clock: this year, not the epoch nor a client's claim.
          { id: 'this-year', effect: 'ALLOW', when: and(eq('action', 'timed'), { op: 'between', input: 'request_time', min: `${year - 1}-12-31T00:00:00Z`, max: `${year + 1}-01-01T23:59:59Z` }) },
        ],
      });
      const read = (agent: string, permit: string, resource: string) => authorize({ agent, permit, action: 'read', resource });
      assert.equal((await read(holder.did, root.jws, 'resource://docs/deep/a')).decision, 'ALLOW', 'depth 0');
      assert.equal((await read(delegateAgent.did, chain, 'resource://docs/a')).decision, 'ALLOW', 'depth 1, elsewhere');
      const deep = await read(delegateAgent.did, chain, 'resource://docs/deep/a');
      assert.deepEqual([deep.decision, deep.reason_code], ['DENY', 'policy_deny'], 'depth 1 reaches the rule');
      const pinnedDeny = await read(pinned.did, blocked.jws, 'resource://docs/a');
      assert.deepEqual([pinnedDeny.decision, pinnedDeny.reason_code], ['DENY', 'policy_deny']);
      const timed = await authorize({ agent: holder.did, permit: root.jws, action: 'timed', resource: 'resource://docs/a' });
      assert.equal(timed.decision, 'ALLOW', JSON.stringify(timed));
    });

    test('root_permit_commitment names the issued permit a chain grows from: a rule on it reaches every delegate, a self-delegation too', async () => {
      const from = new Date(Date.now() - 1).toISOString();
      const holder = newAgent();
      const other = newAgent();
      const root = await issue(svc, holder.did, ANY);
      // A link to itself changes the presented commitment and nothing else.
      const toSelf = await delegate(root.jws, holder, holder.did, ANY);
      const toOther = await delegate(toSelf, holder, other.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const read = (agent: string, permit: string) => authorize({ agent, permit, action: 'read', resource: 'resource://docs/a' });
      const rules = [{ id: 'read', effect: 'ALLOW', when: eq('action', 'read') }];
      await activatePolicy(svc, { spec_version: '1', rules: [...rules, { id: 'leaf-only', effect: 'DENY', when: eq('permit_commitment', root.commitment) }] });
      assert.equal((await read(holder.did, root.jws)).reason_code, 'policy_deny');
      assert.equal((await read(holder.did, toSelf)).decision, 'ALLOW', 'permit_commitment is the presented link: a delegate is another permit');
      await activatePolicy(svc, { spec_version: '1', rules: [...rules, { id: 'whole-tree', effect: 'DENY', when: eq('root_permit_commitment', root.commitment) }] });
      for (const [agent, permit] of [[holder.did, root.jws], [holder.did, toSelf], [other.did, toOther]] as const) {
        const d = await read(agent, permit);
        assert.deepEqual([d.decision, d.reason_code], ['DENY', 'policy_deny'], JSON.stringify(d));
      }
      // Replay gives recorded decisions the same input: the delegates' ALLOWs above would now be DENYs.
      const author = await svc.keyHeader(['POLICY_AUTHOR']);
      const replay = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/policy/replay`, headers: author,
        payload: { policy: { spec_version: '1', rules: [...rules, { id: 'whole-tree', effect: 'DENY', when: eq('root_permit_commitment', root.commitment) }] }, from } });
      assert.equal(replay.statusCode, 200, replay.body);
      assert.deepEqual([replay.json().considered, replay.json().transitions], [5, { 'ALLOW->DENY': 1 }], replay.body);
      assert.equal(replay.json().samples[0].inputs.root_permit_commitment, root.commitment, 'the sample shows the input that changed it');
    });

    test('indeterminate_missing_input when the outcome depends on it; a malformed input is a 400 whatever the policy reads', async () => {
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, ANY);
      await activatePolicy(svc, {
        spec_version: '1',
        rules: [
          { id: 'small-charges', effect: 'ALLOW', when: and(eq('action', 'charge'), { op: 'lte', input: 'amount.minor', value: 100, currency: 'EUR' }) },
          { id: 'named-actions', effect: 'ALLOW', when: { op: 'in', input: 'action', values: ['read', 'write'] } },
          { id: 'store', effect: 'ALLOW', when: { op: 'matches_resource', input: 'resource', value: 'resource://store/*' } },
        ],
      });
      const missing = await authorize({ agent: agent.did, permit: jws, action: 'charge', resource: 'resource://shop/1' });
      assert.deepEqual([missing.decision, missing.reason_code], ['DENY', 'indeterminate_missing_input'], JSON.stringify(missing));
      // The caller and the audit record are told which rule failed closed, and why.
      const why = 'indeterminate: rule "small-charges" could not be evaluated (an input it reads was not supplied); the policy fails closed';
      assert.equal(missing.detail, why);
      assert.equal((await recordedDecision(svc.ts.store.db, missing.audit_id)).detail, why);
      const mismatch = await authorize({ agent: agent.did, permit: jws, action: 'charge', resource: 'resource://shop/1', amount: { minor: 5, currency: 'USD' } });
      assert.deepEqual([mismatch.reason_code, mismatch.detail], ['indeterminate_currency_mismatch', 'indeterminate: rule "small-charges" could not be evaluated (it compares an amount in another currency than the request\'s); the policy fails closed']);
      // A malformed input never reaches the policy through this route: the request schema refuses what the
      // evaluator would call invalid (a bad percent escape too), so the same request is a 400 whatever
      // the active policy reads. indeterminate_invalid_input stays the evaluator's fail-closed answer
      // (test/domain/policy/evaluate.test.ts reaches it).
      const invalid = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit: jws, action: 'other', resource: 'resource://store/%zz' } });
      assert.equal(invalid.statusCode, 400, invalid.body);
      assert.deepEqual(invalid.json().errors.map((e: { pointer: string }) => e.pointer), ['/resource']);
    });
  });
}
