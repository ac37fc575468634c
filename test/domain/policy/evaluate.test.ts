import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePolicy, evaluate, policyHash, validatePolicy, type PolicyInput } from '../../../src/domain/policy/index.ts';

function compile(rules: unknown[]) {
  const result = validatePolicy({ spec_version: '1', rules });
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return compilePolicy(result.policy);
}
const T0 = Date.parse('2025-03-01T12:00:00Z');
const base: PolicyInput = { action: 'pay', resource: 'resource://shop/orders/1', agent: 'did:key:zAlice', amount: { minor: 500, currency: 'EUR' }, request_time: T0, delegation_depth: 1, permit_commitment: 'ab'.repeat(32), backend_finality: 'final' };
const decide = (rules: unknown[], input: PolicyInput = base) => {
  const r = evaluate(compile(rules), input);
  return `${r.decision} ${r.reason_code}`;
};
const when = (condition: unknown, effect = 'ALLOW') => [{ id: 'r', effect, when: condition }];

test('no rule matched is DENY no_matching_rule; an empty policy denies', () => {
  assert.equal(decide([]), 'DENY no_matching_rule');
  assert.equal(decide(when({ op: 'eq', input: 'action', value: 'read' })), 'DENY no_matching_rule');
});

test('the result is the meet of matched effects with their reason codes', () => {
  const allow = { id: 'a', effect: 'ALLOW' };
  const approve = { id: 'b', effect: 'REQUIRE_APPROVAL' };
  const deny = { id: 'c', effect: 'DENY' };
  assert.equal(decide([allow]), 'ALLOW policy_allow');
  assert.equal(decide([allow, approve]), 'REQUIRE_APPROVAL policy_require_approval');
  assert.equal(decide([approve, allow, deny]), 'DENY policy_deny');
  const r = evaluate(compile([allow, approve, deny]), base);
  assert.deepEqual(r.matched_rules, ['a', 'b', 'c']);
  assert.equal(r.steps, 3);
});

test('each operator decides as documented', () => {
  const cases: [unknown, boolean][] = [
    [{ op: 'eq', input: 'action', value: 'pay' }, true],
    [{ op: 'neq', input: 'action', value: 'pay' }, false],
    [{ op: 'eq', input: 'agent', value: 'did:key:zAlice' }, true],
    [{ op: 'lt', input: 'amount.minor', value: 500, currency: 'EUR' }, false],
    [{ op: 'lte', input: 'amount.minor', value: 500, currency: 'EUR' }, true],
    [{ op: 'gt', input: 'delegation_depth', value: 0 }, true],
    [{ op: 'gte', input: 'request_time', value: '2025-03-01T13:00:00+01:00' }, true],
    [{ op: 'gt', input: 'request_time', value: '2025-03-01T12:00:00Z' }, false],
    [{ op: 'between', input: 'amount.minor', min: 500, max: 500, currency: 'EUR' }, true],
    [{ op: 'between', input: 'amount.minor', min: 501, max: 900, currency: 'EUR' }, false],
    [{ op: 'between', input: 'delegation_depth', min: 0, max: 1 }, true],
    [{ op: 'in', input: 'action', values: ['read', 'pay'] }, true],
    [{ op: 'not_in', input: 'action', values: ['read', 'pay'] }, false],
    [{ op: 'in', input: 'amount.currency', values: ['USD'] }, false],
    [{ op: 'eq', input: 'permit_commitment', value: 'ab'.repeat(32) }, true],
    [{ op: 'eq', input: 'backend_finality', value: 'final' }, true],
    [{ op: 'matches_resource', input: 'resource', value: 'resource://shop/*' }, true],
    [{ op: 'matches_resource', input: 'resource', value: 'resource://shop/orders/1*' }, true],
    [{ op: 'matches_resource', input: 'resource', value: 'resource://shop/orders/1' }, true],
    [{ op: 'matches_resource', input: 'resource', value: 'resource://shop/orders' }, false],
    [{ op: 'matches_resource', input: 'resource', value: 'resource://docs/*' }, false],
    [{ op: 'within_time_window', input: 'request_time', from: '2025-03-01T12:00:00Z', until: '2025-03-01T13:00:00Z' }, true],
    [{ op: 'within_time_window', input: 'request_time', from: '2025-03-01T11:00:00Z', until: '2025-03-01T12:00:00Z' }, false],
    [{ op: 'and', args: [{ op: 'eq', input: 'action', value: 'pay' }, { op: 'eq', input: 'agent', value: 'did:key:zBob' }] }, false],
    [{ op: 'or', args: [{ op: 'eq', input: 'action', value: 'read' }, { op: 'eq', input: 'agent', value: 'did:key:zAlice' }] }, true],
    [{ op: 'not', args: [{ op: 'eq', input: 'action', value: 'read' }] }, true],
  ];
  for (const [condition, expected] of cases) {
    assert.equal(decide(when(condition)), expected ? 'ALLOW policy_allow' : 'DENY no_matching_rule', JSON.stringify(condition));
  }
});

test('a currency mismatch is indeterminate and fails closed, never false', () => {
  const usd = { ...base, amount: { minor: 500, currency: 'USD' } };
  assert.equal(decide(when({ op: 'lt', input: 'amount.minor', value: 1000, currency: 'EUR' }), usd), 'DENY indeterminate_currency_mismatch');
  // not(UNKNOWN) stays UNKNOWN: negation cannot turn doubt into an ALLOW.
  assert.equal(decide(when({ op: 'not', args: [{ op: 'gt', input: 'amount.minor', value: 1000, currency: 'EUR' }] }), usd), 'DENY indeterminate_currency_mismatch');
  // Guarding on the currency makes the rule simply not match.
  const guarded = when({ op: 'and', args: [{ op: 'eq', input: 'amount.currency', value: 'EUR' }, { op: 'lt', input: 'amount.minor', value: 1000, currency: 'EUR' }] });
  assert.equal(decide(guarded, usd), 'DENY no_matching_rule');
  const r = evaluate(compile(when({ op: 'lt', input: 'amount.minor', value: 1000, currency: 'EUR' })), usd);
  assert.deepEqual(r.indeterminate_rules, ['r']);
  assert.deepEqual(r.matched_rules, []);
});

test('a missing or malformed input is indeterminate and fails closed', () => {
  const rules = when({ op: 'lt', input: 'amount.minor', value: 1000, currency: 'EUR' });
  const { amount: _, ...noAmount } = base;
  assert.equal(decide(rules, noAmount), 'DENY indeterminate_missing_input');
  assert.equal(decide(rules, { ...base, amount: { minor: 1.5, currency: 'EUR' } }), 'DENY indeterminate_invalid_input');
  assert.equal(decide(when({ op: 'matches_resource', input: 'resource', value: 'resource://public/*' }), { ...base, resource: 'resource://public/../admin' }), 'DENY indeterminate_invalid_input');
  assert.equal(decide(when({ op: 'eq', input: 'action', value: 'pay' }), { ...base, action: 42 } as unknown as PolicyInput), 'DENY indeterminate_invalid_input');
  assert.equal(decide(when({ op: 'gt', input: 'request_time', value: '2025-01-01T00:00:00Z' }), { ...base, request_time: '2025-03-01T12:00:00Z' } as unknown as PolicyInput), 'DENY indeterminate_invalid_input');
});

test('an indeterminate rule decides only when its outcome could change the decision', () => {
  const usd = { ...base, amount: { minor: 500, currency: 'USD' } };
  const approve = { id: 'approve', effect: 'REQUIRE_APPROVAL', when: { op: 'eq', input: 'action', value: 'pay' } };
  const allowSmall = { id: 'small', effect: 'ALLOW', when: { op: 'lt', input: 'amount.minor', value: 1000, currency: 'EUR' } };
  const denyBig = { id: 'big', effect: 'DENY', when: { op: 'gt', input: 'amount.minor', value: 1000, currency: 'EUR' } };
  const allowPay = { id: 'pay', effect: 'ALLOW', when: { op: 'eq', input: 'action', value: 'pay' } };
  // Whether `small` matches or not, the meet is REQUIRE_APPROVAL.
  assert.equal(decide([approve, allowSmall], usd), 'REQUIRE_APPROVAL policy_require_approval');
  // `big` could turn the ALLOW into a DENY: fail closed.
  assert.equal(decide([allowPay, denyBig], usd), 'DENY indeterminate_currency_mismatch');
  // A matched DENY is a definite deny whatever else is unknown.
  assert.equal(decide([{ id: 'd', effect: 'DENY' }, allowSmall], usd), 'DENY policy_deny');
});

test('the index never hides a rule: missing indexed inputs make their rules candidates', () => {
  const rules = [
    { id: 'by-action', effect: 'ALLOW', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'pay' }, { op: 'lt', input: 'delegation_depth', value: 3 }] } },
    { id: 'by-agent', effect: 'DENY', when: { op: 'in', input: 'agent', values: ['did:key:zMallory'] } },
    { id: 'by-prefix', effect: 'REQUIRE_APPROVAL', when: { op: 'matches_resource', input: 'resource', value: 'resource://shop/*' } },
  ];
  assert.equal(decide(rules), 'REQUIRE_APPROVAL policy_require_approval');
  assert.equal(decide(rules, { ...base, agent: 'did:key:zMallory' }), 'DENY policy_deny');
  const { action: _a, ...noAction } = base;
  // by-action is a candidate and UNKNOWN, but an ALLOW cannot change a REQUIRE_APPROVAL meet.
  const r = evaluate(compile(rules), noAction);
  assert.deepEqual([r.decision, r.matched_rules, r.indeterminate_rules], ['REQUIRE_APPROVAL', ['by-prefix'], ['by-action']]);
  const { agent: _b, ...noAgent } = base;
  assert.equal(decide(rules, noAgent), 'DENY indeterminate_missing_input');
});

test('evaluation is deterministic, including the step count', () => {
  const compiled = compile([
    { id: 'a', effect: 'ALLOW', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'pay' }, { op: 'lte', input: 'amount.minor', value: 900, currency: 'EUR' }] } },
    { id: 'b', effect: 'REQUIRE_APPROVAL', when: { op: 'or', args: [{ op: 'gt', input: 'delegation_depth', value: 3 }, { op: 'matches_resource', input: 'resource', value: 'resource://shop/*' }] } },
  ]);
  const first = evaluate(compiled, base);
  for (let i = 0; i < 5; i++) assert.deepEqual(evaluate(compiled, base), first);
  // 1 index probe (action; no rule is indexed on agent or resource) + 2 rules + and(2 leaves) + or(2 leaves) = 9.
  assert.deepEqual(first, { decision: 'REQUIRE_APPROVAL', reason_code: 'policy_require_approval', matched_rules: ['a', 'b'], indeterminate_rules: [], steps: 9 });
});

test('never throws on hostile evaluation inputs', () => {
  const compiled = compile([{ id: 'a', effect: 'ALLOW', when: { op: 'eq', input: 'action', value: 'pay' } }]);
  const hostile: unknown[] = [null, undefined, 7, 'x', [], { action: null }, { action: { toString: 1 } }, { amount: 'EUR 5' }, { amount: [] }, Object.create(null)];
  const throwing = { get action(): string { throw new Error('boom'); } };
  for (const input of [...hostile, throwing]) {
    const r = evaluate(compiled, input as PolicyInput);
    assert.equal(r.decision, 'DENY');
  }
});

test('the document hash is SHA-256 of RFC 8785 canonical JSON', () => {
  const a = validatePolicy({ spec_version: '1', rules: [{ id: 'r', effect: 'ALLOW', when: { op: 'eq', input: 'action', value: 'pay' } }] });
  const b = validatePolicy(JSON.parse('{"rules":[{"when":{"value":"pay","input":"action","op":"eq"},"effect":"ALLOW","id":"r"}],"spec_version":"1"}'));
  assert.ok(a.ok && b.ok);
  assert.equal(policyHash(a.policy), policyHash(b.policy));
  // sha256('{"rules":[{"effect":"ALLOW","id":"r","when":{"input":"action","op":"eq","value":"pay"}}],"spec_version":"1"}')
  assert.equal(policyHash(a.policy), 'b4d10d2355f35498240a89396463732b2c40ba62057015dc737d4d3ba1a47175');
});

test('a decision\'s detail names at most 20 undecidable rules, then how many more', async () => {
  const { indeterminateDetail, DETAIL_RULES } = await import('../../../src/domain/policy/reasons.ts');
  const { POLICY_REASONS } = await import('../../../src/domain/policy/index.ts');
  const ids = Array.from({ length: 10_000 }, (_, i) => `rule-${i}`);
  const detail = indeterminateDetail({ reason_code: POLICY_REASONS.missingInput, indeterminate_rules: ids })!;
  assert.equal(DETAIL_RULES, 20);
  assert.match(detail, /^indeterminate: rules "rule-0", .*"rule-19" and 9980 more could not be evaluated/);
  assert.ok(!detail.includes('"rule-20"'));
  assert.match(indeterminateDetail({ reason_code: POLICY_REASONS.missingInput, indeterminate_rules: ['only'] })!, /^indeterminate: rule "only" could not/);
});

test('the indeterminate reason names a cause that mattered, not one of a rule that could not change the decision', () => {
  // r-ra matched (REQUIRE_APPROVAL). allow-docs is undecidable on a malformed resource but, being an
  // ALLOW, cannot change the decision; deny-root is undecidable on a missing root_permit_commitment and
  // could (DENY < REQUIRE_APPROVAL). The decision fails closed because of the missing input only.
  const rules = [
    { id: 'r-ra', effect: 'REQUIRE_APPROVAL', when: { op: 'eq', input: 'action', value: 'pay' } },
    { id: 'allow-docs', effect: 'ALLOW', when: { op: 'matches_resource', input: 'resource', value: 'resource://docs/*' } },
    { id: 'deny-root', effect: 'DENY', when: { op: 'eq', input: 'root_permit_commitment', value: 'a'.repeat(64) } },
  ];
  const input = { action: 'pay', agent: 'did:key:zA', resource: 'resource://docs/../x' } as PolicyInput;
  assert.equal(decide(rules, input), 'DENY indeterminate_missing_input');
  // The same with a currency mismatch on a rule that cannot matter: still the missing input.
  const rules2 = [rules[0]!, { id: 'allow-eur', effect: 'ALLOW', when: { op: 'lt', input: 'amount.minor', value: 10, currency: 'EUR' } }, rules[2]!];
  assert.equal(decide(rules2, { ...input, resource: 'resource://docs/a', amount: { minor: 5, currency: 'USD' } } as PolicyInput), 'DENY indeterminate_missing_input');
  // With nothing matched every indeterminate rule matters, and precedence applies across them.
  assert.equal(decide(rules.slice(1), { ...input, action: 'read' } as PolicyInput), 'DENY indeterminate_invalid_input');
});

test('a fail-closed detail names only the rules that could change the decision, each with its own cause', async () => {
  const { indeterminateDetail } = await import('../../../src/domain/policy/reasons.ts');
  const detailOf = (rules: unknown[], input: PolicyInput) => {
    const r = evaluate(compile(rules), input);
    return [r.reason_code, indeterminateDetail(r)];
  };
  const ra = { id: 'r-ra', effect: 'REQUIRE_APPROVAL', when: { op: 'eq', input: 'action', value: 'pay' } };
  const allowDocs = { id: 'allow-docs', effect: 'ALLOW', when: { op: 'matches_resource', input: 'resource', value: 'resource://docs/*' } };
  const denyRoot = { id: 'deny-root', effect: 'DENY', when: { op: 'eq', input: 'root_permit_commitment', value: 'a'.repeat(64) } };
  const denyEur = { id: 'deny-eur', effect: 'DENY', when: { op: 'gt', input: 'amount.minor', value: 10, currency: 'EUR' } };
  const input = { action: 'pay', agent: 'did:key:zA', resource: 'resource://docs/../x' } as PolicyInput;
  // allow-docs is undecidable too, but an ALLOW cannot change a matched REQUIRE_APPROVAL: not named.
  assert.deepEqual(detailOf([ra, allowDocs, denyRoot], input), ['indeterminate_missing_input',
    'indeterminate: rule "deny-root" could not be evaluated (an input it reads was not supplied); the policy fails closed']);
  // Two rules that mattered, for different causes: the reason is the worst, and each is named with its own.
  assert.deepEqual(detailOf([ra, denyRoot, denyEur], { ...input, amount: { minor: 50, currency: 'USD' } } as PolicyInput), ['indeterminate_currency_mismatch',
    'indeterminate: rule "deny-eur" could not be evaluated (it compares an amount in another currency than the request\'s); '
    + 'rule "deny-root" could not be evaluated (an input it reads was not supplied); the policy fails closed']);
  // Beyond the cap, mixed causes: how many more, without claiming their cause.
  const many = Array.from({ length: 25 }, (_, i) => ({ ...denyRoot, id: `root-${i}` }));
  const [, detail] = detailOf([denyEur, ...many], { ...input, action: 'x', amount: { minor: 50, currency: 'USD' } } as PolicyInput);
  assert.match(detail!, /^indeterminate: rule "deny-eur" could not be evaluated \(it compares .*\); rules "root-0", .*"root-18" could not be evaluated \(an input it reads was not supplied\); 6 more could not be evaluated either; the policy fails closed$/);
});
