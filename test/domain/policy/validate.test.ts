import { test } from 'node:test';
import assert from 'node:assert/strict';
import { POLICY_LIMITS, validatePolicy } from '../../../src/domain/policy/index.ts';

const located = (doc: unknown) => {
  const result = validatePolicy(doc);
  return result.ok ? [] : result.errors.map((e) => `${e.pointer} ${e.code}`);
};
const rule = (when: unknown, extra: Record<string, unknown> = {}) => ({ spec_version: '1', rules: [{ id: 'r', effect: 'ALLOW', when, ...extra }] });

test('accepts a document using every operator over every input', () => {
  const doc = {
    spec_version: '1',
    rules: [
      { id: 'always', effect: 'DENY' },
      { id: 'eq', effect: 'ALLOW', when: { op: 'and', args: [
        { op: 'eq', input: 'action', value: 'payments.create' },
        { op: 'neq', input: 'agent', value: 'did:key:z6MkBad' },
        { op: 'eq', input: 'resource', value: 'resource://shop/orders' },
        { op: 'eq', input: 'amount.currency', value: 'EUR' },
        { op: 'eq', input: 'permit_commitment', value: 'a'.repeat(64) },
        { op: 'neq', input: 'backend_finality', value: 'pending' },
      ] } },
      { id: 'cmp', effect: 'REQUIRE_APPROVAL', when: { op: 'or', args: [
        { op: 'lt', input: 'amount.minor', value: 100, currency: 'EUR' },
        { op: 'lte', input: 'delegation_depth', value: 2 },
        { op: 'gt', input: 'request_time', value: '2025-01-01T00:00:00Z' },
        { op: 'gte', input: 'amount.minor', value: 0, currency: 'USD' },
        { op: 'between', input: 'amount.minor', min: 10, max: 10, currency: 'EUR' },
        { op: 'between', input: 'request_time', min: '2025-01-01T00:00:00+01:00', max: '2025-01-02T00:00:00.5Z' },
      ] } },
      { id: 'sets', effect: 'ALLOW', when: { op: 'not', args: [{ op: 'and', args: [
        { op: 'in', input: 'action', values: ['a', 'b'] },
        { op: 'not_in', input: 'agent', values: ['did:web:example.com'] },
        { op: 'in', input: 'amount.minor', values: [1, 2], currency: 'JPY' },
        { op: 'matches_resource', input: 'resource', value: 'resource://docs/*' },
        { op: 'matches_resource', input: 'resource', value: 'resource://docs/exact' },
        { op: 'within_time_window', input: 'request_time', from: '2025-01-01T09:00:00Z', until: '2025-01-01T17:00:00Z' },
      ] }] } },
    ],
  };
  const result = validatePolicy(doc);
  assert.deepEqual(result, { ok: true, policy: doc });
  assert.ok(result.ok && result.policy !== (doc as unknown), 'returns a fresh copy');
});

test('reports every error at once, each located by an RFC 6901 pointer', () => {
  const errors = located({
    spec_version: '2',
    extra: true,
    rules: [
      { id: 'a', effect: 'MAYBE', when: { op: 'and', args: [] } },
      { id: 'a', effect: 'ALLOW', when: { op: 'or', args: [{ op: 'eq', input: 'action', value: 'x' }, { op: 'frobnicate', input: 'action' }] } },
      { id: 'b', effect: 'ALLOW', when: { op: 'lt', input: 'amount.minor', value: 10 } },
      { id: 'c', effect: 'DENY', when: { op: 'eq', input: 'risk_score', value: 3 } },
    ],
  });
  assert.deepEqual(errors, [
    '/extra unknown_field',
    '/spec_version unsupported_spec_version',
    '/rules/0/effect invalid_effect',
    '/rules/0/when/args empty_composite',
    '/rules/1/id duplicate_rule_id',
    '/rules/1/when/args/1/op unknown_operator',
    '/rules/2/when/currency currency_required',
    '/rules/3/when/input input_not_available',
  ]);
});

test('names the milestone of an input not yet available', () => {
  const result = validatePolicy(rule({ op: 'gt', input: 'risk_score', value: 50 }));
  assert.equal(result.ok, false);
  assert.ok(!result.ok);
  assert.equal(result.errors[0]?.code, 'input_not_available');
  assert.match(result.errors[0]?.message ?? '', /risk_score is produced by the risk-scoring milestone, not yet available/);
});

test('refuses operators applied to inputs of the wrong type', () => {
  assert.deepEqual(located(rule({ op: 'lt', input: 'action', value: 'x' })), ['/rules/0/when/op operator_not_applicable']);
  assert.deepEqual(located(rule({ op: 'matches_resource', input: 'agent', value: 'resource://x/*' })), ['/rules/0/when/op operator_not_applicable']);
  assert.deepEqual(located(rule({ op: 'within_time_window', input: 'delegation_depth', from: '2025-01-01T00:00:00Z', until: '2025-01-02T00:00:00Z' })), ['/rules/0/when/op operator_not_applicable']);
  assert.deepEqual(located(rule({ op: 'eq', input: 'delegation_depth', value: '2' })), ['/rules/0/when/value invalid_type']);
  assert.deepEqual(located(rule({ op: 'eq', input: 'agent', value: 'alice' })), ['/rules/0/when/value invalid_value']);
  assert.deepEqual(located(rule({ op: 'eq', input: 'nope', value: 1 })), ['/rules/0/when/input unknown_input']);
});

test('checks money literals with the money rules and currencies per comparison', () => {
  assert.deepEqual(located(rule({ op: 'lt', input: 'amount.minor', value: '100', currency: 'EUR' })), ['/rules/0/when/value money_minor_not_number']);
  assert.deepEqual(located(rule({ op: 'lt', input: 'amount.minor', value: 1.5, currency: 'EUR' })), ['/rules/0/when/value money_minor_not_integer']);
  assert.deepEqual(located(rule({ op: 'lt', input: 'amount.minor', value: -1, currency: 'EUR' })), ['/rules/0/when/value money_minor_negative']);
  assert.deepEqual(located(rule({ op: 'lt', input: 'amount.minor', value: 2 ** 53, currency: 'EUR' })), ['/rules/0/when/value money_minor_too_large']);
  assert.deepEqual(located(rule({ op: 'lt', input: 'amount.minor', value: 1, currency: 'eur' })), ['/rules/0/when/currency invalid_currency']);
  assert.deepEqual(located(rule({ op: 'eq', input: 'action', value: 'x', currency: 'EUR' })), ['/rules/0/when/currency currency_not_applicable']);
  assert.deepEqual(located(rule({ op: 'between', input: 'amount.minor', min: 5, max: 4, currency: 'EUR' })), ['/rules/0/when/max invalid_range']);
  assert.deepEqual(located(rule({ op: 'in', input: 'amount.minor', values: [1, 'x'], currency: 'EUR' })), ['/rules/0/when/values/1 money_minor_not_number']);
});

test('refuses malformed resource patterns, resources and time windows', () => {
  for (const value of ['resource://a*/b', 'resource://a/**', 'https://x/*', 'resource://a//b/*', 'resource://a/../*', 'resource://', 7]) {
    const errors = located(rule({ op: 'matches_resource', input: 'resource', value }));
    assert.equal(errors.length, 1, String(value));
    assert.match(errors[0] ?? '', /^\/rules\/0\/when\/value (invalid_resource_pattern|invalid_type)$/);
  }
  assert.deepEqual(located(rule({ op: 'eq', input: 'resource', value: 'resource://a/../b' })), ['/rules/0/when/value invalid_resource']);
  assert.deepEqual(located(rule({ op: 'within_time_window', input: 'request_time', from: '2025-01-02T00:00:00Z', until: '2025-01-01T00:00:00Z' })), ['/rules/0/when/until invalid_time_window']);
  assert.deepEqual(located(rule({ op: 'within_time_window', input: 'request_time', from: '2025-02-30T00:00:00Z', until: 'tomorrow' })), ['/rules/0/when/from invalid_timestamp', '/rules/0/when/until invalid_timestamp']);
  assert.deepEqual(located(rule({ op: 'within_time_window', input: 'request_time', from: '2025-01-01T00:00:00Z' })), ['/rules/0/when/until missing_field']);
});

test('escapes pointer tokens and reports unknown fields everywhere', () => {
  assert.deepEqual(located(rule({ op: 'eq', input: 'action', value: 'x', 'a/b~c': 1 })), ['/rules/0/when/a~1b~0c unknown_field']);
  assert.deepEqual(located(rule(undefined, { note: 'x' })), ['/rules/0/note unknown_field']);
  assert.deepEqual(located(rule({ op: 'not', args: [{ op: 'eq', input: 'action', value: 'x' }, { op: 'eq', input: 'action', value: 'y' }] })), ['/rules/0/when/args invalid_arity']);
});

test('never throws on hostile JSON', () => {
  const hostile: unknown[] = [
    null, undefined, 0, 'policy', [], [1, 2], true, { spec_version: null, rules: null },
    { spec_version: '1', rules: {} }, { spec_version: '1', rules: [null, 1, 'x', [], { id: 5, effect: null, when: [] }] },
    { spec_version: '1', rules: [{ id: 'x', effect: 'ALLOW', when: { op: 'and', args: { 0: {} } } }] },
    { spec_version: '1', rules: [{ id: 'x', effect: 'ALLOW', when: { op: { op: 'eq' }, input: ['action'] } }] },
    JSON.parse('{"__proto__": {"op": "eq"}, "spec_version": "1", "rules": []}'),
    { spec_version: '1', rules: [{ id: 'constructor', effect: 'ALLOW', when: { op: 'toString', input: 'hasOwnProperty' } }] },
  ];
  for (const doc of hostile) {
    const result = validatePolicy(doc);
    assert.equal(result.ok, false, JSON.stringify(doc));
  }
});

test('bounds nesting without recursion limits and reports too deep', () => {
  let deep: unknown = { op: 'eq', input: 'action', value: 'x' };
  for (let i = 0; i < 200_000; i++) deep = { op: 'not', args: [deep] };
  const errors = located(rule(deep));
  assert.equal(errors.length, 1);
  assert.match(errors[0] ?? '', / too_deep$/);
  let ok: unknown = { op: 'eq', input: 'action', value: 'x' };
  for (let i = 1; i < POLICY_LIMITS.maxDepth; i++) ok = { op: 'not', args: [ok] };
  assert.deepEqual(located(rule(ok)), []);
});

test('enforces the size limits', () => {
  const many = (n: number) => ({ spec_version: '1', rules: Array.from({ length: n }, (_, i) => ({ id: `r${i}`, effect: 'ALLOW' })) });
  assert.equal(validatePolicy(many(POLICY_LIMITS.maxRules)).ok, true);
  assert.deepEqual(located(many(POLICY_LIMITS.maxRules + 1)), ['/rules too_many_rules']);
  assert.deepEqual(located(rule({ op: 'in', input: 'action', values: Array.from({ length: POLICY_LIMITS.maxListSize + 1 }, (_, i) => `a${i}`) })), ['/rules/0/when/values list_too_long']);
  assert.deepEqual(located(rule({ op: 'in', input: 'action', values: [] })), ['/rules/0/when/values empty_list']);
  assert.deepEqual(located(rule({ op: 'or', args: Array.from({ length: POLICY_LIMITS.maxArgs + 1 }, () => ({ op: 'eq', input: 'action', value: 'x' })) })), ['/rules/0/when/args too_many_args']);
  assert.deepEqual(located(rule({ op: 'eq', input: 'backend_finality', value: 'x'.repeat(POLICY_LIMITS.maxStringLength + 1) })), ['/rules/0/when/value string_too_long']);
  assert.deepEqual(located({ spec_version: '1', rules: [{ id: 'x'.repeat(POLICY_LIMITS.maxRuleIdLength + 1), effect: 'ALLOW' }] }), ['/rules/0/id invalid_rule_id']);
  // 10,000 rules of 100-value lists exceed the total node budget; validation stops there.
  const big = { spec_version: '1', rules: Array.from({ length: 10_000 }, (_, i) => ({ id: `r${i}`, effect: 'ALLOW', when: { op: 'in', input: 'delegation_depth', values: Array.from({ length: 100 }, (_, j) => j) } })) };
  const errors = located(big);
  assert.equal(errors.length, 1);
  assert.match(errors[0] ?? '', / document_too_large$/);
});

test('caps the number of errors returned', () => {
  const doc = { spec_version: '1', rules: Array.from({ length: 3_000 }, () => ({ id: 'same', effect: 'ALLOW' })) };
  const result = validatePolicy(doc);
  assert.ok(!result.ok);
  assert.equal(result.errors.length, POLICY_LIMITS.maxErrors + 1);
  assert.equal(result.errors.at(-1)?.code, 'too_many_errors');
});

test('a submitted document spells its resource literals as a request may; a stored one goes on validating', () => {
  const doc = { spec_version: '1', rules: [{ id: 'deny', effect: 'DENY', when: { op: 'or', args: [
    { op: 'matches_resource', input: 'resource', value: 'resource://files/%73ecret*' },
    { op: 'eq', input: 'resource', value: 'resource://FILES/secret' },
    { op: 'in', input: 'resource', values: ['resource://files/ok', 'resource://files/caf%c3%a9'] },
    { op: 'matches_resource', input: 'resource', value: 'resource://files/secret;x/*' },
    { op: 'matches_resource', input: 'resource', value: 'resource://files/*' },
  ] } }] };
  const submitted = validatePolicy(doc, { submitted: true });
  assert.equal(submitted.ok, false);
  assert.deepEqual(!submitted.ok && submitted.errors.map((e) => `${e.pointer} ${e.code}`), [
    '/rules/0/when/args/0/value resource_not_normal',
    '/rules/0/when/args/1/value resource_not_normal',
    '/rules/0/when/args/2/values/1 resource_not_normal',
    '/rules/0/when/args/3/value resource_not_normal',
  ]);
  // A version stored before the rule is read as it was (its literals then match no request).
  assert.equal(validatePolicy(doc).ok, true);
});

test('backend_finality, which no request carries before chain signing, is refused in a submitted document and read in a stored one', () => {
  const doc = rule({ op: 'eq', input: 'backend_finality', value: 'final' });
  const submitted = validatePolicy(doc, { submitted: true });
  assert.deepEqual(!submitted.ok && submitted.errors.map((e) => `${e.pointer} ${e.code}`), ['/rules/0/when/input input_not_available']);
  assert.match(!submitted.ok ? submitted.errors[0]!.message : '', /chain-signing milestone/);
  assert.equal(validatePolicy(doc).ok, true);
});
