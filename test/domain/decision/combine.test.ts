// The final decision is the meet of the frozen check, the permit, the policy and the human-approval
// condition (issue 5, spec 4.1 rules 2-5), over every combination of the conjuncts: only a grant by
// all of them allows, a REQUIRE_APPROVAL never comes out as an allow unless an approval satisfied
// it, and the reason names the strongest cause (frozen, then permit, then the policy).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { combine, type Conjuncts } from '../../../src/domain/decision/combine.ts';

const policies: Conjuncts['policy'][] = [
  null,
  { decision: 'ALLOW', reason_code: 'policy_allow' },
  { decision: 'REQUIRE_APPROVAL', reason_code: 'policy_require_approval' },
  { decision: 'DENY', reason_code: 'policy_deny' },
  { decision: 'DENY', reason_code: 'no_matching_rule' },
  { decision: 'DENY', reason_code: 'indeterminate_missing_input', detail: 'indeterminate: rule "r" could not be evaluated' },
];
const failure = { check: 'expired', detail: 'expired: the permit expired at 2030-01-01T00:00:00.000Z' };

test('the meet of every combination of frozen, delegator frozen, permit, policy and approval', () => {
  let cases = 0;
  for (const frozen of [false, true]) for (const frozenDelegator of [undefined, 'did:key:z6Mkparent']) for (const permitFailure of [null, failure])
    for (const policy of policies) for (const approvalSatisfied of [false, true]) {
      const c: Conjuncts = { frozen, frozenDelegator, permitFailure, policy, approvalSatisfied };
      const got = combine(c);
      const name = JSON.stringify(c);
      cases++;
      if (frozen) {
        assert.deepEqual(got, { decision: 'DENY', reason_code: 'agent_frozen', detail: 'the agent is frozen; nothing it presents authorizes' }, name);
      } else if (frozenDelegator) {
        assert.deepEqual([got.decision, got.reason_code], ['DENY', 'agent_frozen'], name);
        assert.match(got.detail ?? '', /^the permit was delegated by did:key:z6Mkparent, which is frozen/, name);
      } else if (permitFailure) {
        assert.deepEqual(got, { decision: 'DENY', reason_code: 'permit_invalid', detail: failure.detail }, name);
      } else if (policy === null) {
        assert.deepEqual([got.decision, got.reason_code], ['DENY', 'no_active_policy'], name);
      } else if (policy.decision === 'REQUIRE_APPROVAL') {
        assert.deepEqual(got, approvalSatisfied
          ? { decision: 'ALLOW', reason_code: 'approval_granted' }
          : { decision: 'REQUIRE_APPROVAL', reason_code: 'policy_require_approval' }, name);
      } else {
        // An approval grants no authority: it changes neither a policy's ALLOW nor its DENY.
        assert.deepEqual(got, { decision: policy.decision, reason_code: policy.reason_code, ...(policy.detail ? { detail: policy.detail } : {}) }, name);
      }
      // Whatever else: ALLOW only when every conjunct grants.
      if (got.decision === 'ALLOW') assert.ok(!frozen && !frozenDelegator && !permitFailure && policy && policy.decision !== 'DENY', name);
    }
  assert.equal(cases, 2 * 2 * 2 * policies.length * 2);
});
