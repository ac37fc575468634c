// The inputs the decision hands the policy besides the request (spec 3): request_time from the
// server's clock, delegation_depth and permit_commitment from the verified permit; and the two
// indeterminate reason codes, reached through POST /v1/authorize rather than the evaluator alone.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, decide, delegate, issue, newAgent } from '../support/authorize.ts';

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

    test('indeterminate_missing_input and indeterminate_invalid_input, when the outcome depends on them', async () => {
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
      // The route refuses what it can say is malformed (a 400); a bad percent escape it leaves to the policy.
      const invalid = await authorize({ agent: agent.did, permit: jws, action: 'other', resource: 'resource://store/%zz' });
      assert.deepEqual([invalid.decision, invalid.reason_code], ['DENY', 'indeterminate_invalid_input'], JSON.stringify(invalid));
    });
  });
}
