// Edges of validation a mutation audit found untested: each limit at its exact boundary, each
// literal type refused when malformed, and the error list's own bounds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseResourcePattern, parseTimestamp, POLICY_LIMITS, validatePolicy } from '../../../src/domain/policy/index.ts';

const located = (doc: unknown) => {
  const result = validatePolicy(doc);
  return result.ok ? [] : result.errors.map((e) => `${e.pointer} ${e.code}`);
};
const rule = (when: unknown) => ({ spec_version: '1', rules: [{ id: 'r', effect: 'ALLOW', when }] });
const eq = (input: string, value: unknown) => rule({ op: 'eq', input, value });
const nest = (levels: number) => {
  let when: unknown = { op: 'eq', input: 'action', value: 'x' };
  for (let i = 1; i < levels; i++) when = { op: 'not', args: [when] };
  return rule(when);
};

test('every limit admits its bound and refuses one more', () => {
  const S = POLICY_LIMITS.maxStringLength;
  assert.deepEqual(located(eq('backend_finality', 'x'.repeat(64))), []);
  assert.deepEqual(located(rule({ op: 'in', input: 'resource', values: [`resource://a/${'b'.repeat(S - 'resource://a/'.length)}`] })), []);
  assert.deepEqual(located(rule({ op: 'matches_resource', input: 'resource', value: `resource://a/${'b'.repeat(S - 'resource://a/'.length - 1)}*` })), []);
  assert.deepEqual(located(rule({ op: 'matches_resource', input: 'resource', value: `resource://a/${'b'.repeat(S - 'resource://a/'.length)}*` })), ['/rules/0/when/value string_too_long']);
  assert.deepEqual(located(rule({ op: 'in', input: 'action', values: Array.from({ length: POLICY_LIMITS.maxListSize }, (_, i) => `a${i}`) })), []);
  assert.deepEqual(located(rule({ op: 'or', args: Array.from({ length: POLICY_LIMITS.maxArgs }, () => ({ op: 'eq', input: 'action', value: 'x' })) })), []);
  assert.deepEqual(located({ spec_version: '1', rules: [{ id: 'x'.repeat(POLICY_LIMITS.maxRuleIdLength), effect: 'ALLOW' }] }), []);
  assert.deepEqual(located(nest(POLICY_LIMITS.maxDepth)), []);
  assert.deepEqual(located(nest(POLICY_LIMITS.maxDepth + 1)), [`/rules/0/when${'/args/0'.repeat(POLICY_LIMITS.maxDepth)} too_deep`]);
  // Condition nodes plus list values: 200 rules fill the budget to its last node, a rule of one
  // condition; one more node is too many.
  const full = (more: number) => ({ spec_version: '1', rules: [
    ...Array.from({ length: POLICY_LIMITS.maxTotalNodes / 1_000 }, (_, i) => ({ id: `r${i}`, effect: 'ALLOW', when: { op: 'in', input: 'delegation_depth',
      values: Array.from({ length: i === 199 ? 998 : 999 }, (_, j) => j) } })),
    ...Array.from({ length: 1 + more }, (_, i) => ({ id: `e${i}`, effect: 'ALLOW', when: { op: 'eq', input: 'action', value: 'x' } })),
  ] });
  assert.deepEqual(located(full(0)), []);
  assert.deepEqual(located(full(1)), ['/rules/201/when document_too_large']);
});

test('the node budget counts a list before accepting it, the last list of a document too', () => {
  // 200 rules of one condition and 999 values fill the budget exactly; a last list of one value
  // more is over it (its values were once counted after the check, so the last list escaped it).
  const lists = (last: number) => ({ spec_version: '1', rules: Array.from({ length: POLICY_LIMITS.maxTotalNodes / 1_000 }, (_, i) => ({
    id: `r${i}`, effect: 'ALLOW', when: { op: 'in', input: 'delegation_depth', values: Array.from({ length: i === 199 ? last : 999 }, (_, j) => j) },
  })) });
  assert.deepEqual(located(lists(999)), []);
  assert.deepEqual(located(lists(1_000)), ['/rules/199/when/values document_too_large']);
});

test('refuses a malformed literal of every input type', () => {
  assert.deepEqual(located(eq('action', 'two words')), ['/rules/0/when/value invalid_value']);
  assert.deepEqual(located(eq('action', 'a'.repeat(64))), []);
  assert.deepEqual(located(eq('action', 'a'.repeat(65))), ['/rules/0/when/value invalid_value']);
  assert.deepEqual(located(eq('backend_finality', 'x'.repeat(65))), ['/rules/0/when/value invalid_value']);
  assert.deepEqual(located(eq('amount.currency', 'eur')), ['/rules/0/when/value invalid_currency']);
  assert.deepEqual(located(eq('permit_commitment', 'A'.repeat(64))), ['/rules/0/when/value invalid_value']);
  assert.deepEqual(located(eq('backend_finality', 'not a token')), ['/rules/0/when/value invalid_value']);
  assert.deepEqual(located(rule({ op: 'gt', input: 'request_time', value: 'yesterday' })), ['/rules/0/when/value invalid_timestamp']);
  for (const value of [-1, 1.5]) assert.deepEqual(located(eq('delegation_depth', value)), ['/rules/0/when/value invalid_value'], String(value));
  // Only amounts, times and depths are ordered; only resources match patterns.
  for (const input of ['agent', 'resource', 'amount.currency', 'permit_commitment', 'root_permit_commitment']) {
    assert.deepEqual(located(rule({ op: 'lt', input, value: 'x' })), ['/rules/0/when/op operator_not_applicable'], input);
  }
  assert.deepEqual(located(rule({ op: 'matches_resource', input: 'permit_commitment', value: 'resource://a/*' })), ['/rules/0/when/op operator_not_applicable']);
  // An operator that does not apply is reported once, not again for its argument.
  assert.deepEqual(located(rule({ op: 'lt', input: 'action', value: 5 })), ['/rules/0/when/op operator_not_applicable']);
});

test('between orders timestamps as instants, not as text', () => {
  // 10:00+05:00 is 05:00Z, before 06:00Z, though it sorts after it as text.
  assert.deepEqual(located(rule({ op: 'between', input: 'request_time', min: '2025-01-01T10:00:00+05:00', max: '2025-01-01T06:00:00Z' })), []);
  assert.deepEqual(located(rule({ op: 'between', input: 'request_time', min: '2025-01-01T06:00:00Z', max: '2025-01-01T10:00:00+05:00' })), ['/rules/0/when/max invalid_range']);
});

test('a time window holds at least one instant: from equal to until is refused', () => {
  const at = '2025-01-01T00:00:00Z';
  assert.deepEqual(located(rule({ op: 'within_time_window', input: 'request_time', from: at, until: at })), ['/rules/0/when/until invalid_time_window']);
  assert.deepEqual(located(rule({ op: 'within_time_window', input: 'request_time', from: at, until: '2025-01-01T00:00:00.001Z' })), []);
});

test('members: each operator its own, rule ids start with a letter or digit, unknown ones summarised past ten', () => {
  assert.deepEqual(located(rule({ op: 'between', input: 'delegation_depth', min: 1, max: 2, value: 3 })), ['/rules/0/when/value unknown_field']);
  assert.deepEqual(located({ spec_version: '1', rules: [{ id: '_r', effect: 'ALLOW' }] }), ['/rules/0/id invalid_rule_id']);
  const extra = (n: number) => ({ spec_version: '1', rules: [], ...Object.fromEntries(Array.from({ length: n }, (_, i) => [`x${i}`, 1])) });
  const max = POLICY_LIMITS.maxUnknownFieldsPerObject;
  assert.deepEqual(located(extra(max)), Array.from({ length: max }, (_, i) => `/x${i} unknown_field`));
  const over = validatePolicy(extra(max + 1));
  assert.ok(!over.ok);
  assert.deepEqual(over.errors.map((e) => `${e.pointer} ${e.code}`), [...Array.from({ length: max }, (_, i) => `/x${i} unknown_field`), ' unknown_field']);
  assert.match(over.errors.at(-1)!.message, /^1 more unknown fields/);
});

test('the error list stops at its cap even inside one rule', () => {
  // maxErrors - 1 duplicate ids, then a rule with three unknown members: the first is the last error
  // listed, the second closes the list, the third adds nothing.
  const rules: unknown[] = Array.from({ length: POLICY_LIMITS.maxErrors }, () => ({ id: 'same', effect: 'ALLOW' }));
  rules.push({ id: 'last', effect: 'ALLOW', a: 1, b: 2, c: 3 });
  const result = validatePolicy({ spec_version: '1', rules });
  assert.ok(!result.ok);
  assert.equal(result.errors.length, POLICY_LIMITS.maxErrors + 1);
  assert.deepEqual(result.errors.filter((e) => e.code === 'too_many_errors').length, 1);
  assert.equal(result.errors.at(-1)!.code, 'too_many_errors');
});

test('spec_version and rules are both required', () => {
  assert.deepEqual(located({ rules: [] }), ['/spec_version missing_field']);
  assert.deepEqual(located({ spec_version: '1' }), ['/rules missing_field']);
  assert.deepEqual(located({ spec_version: '1', rules: [{ effect: 'ALLOW' }] }), ['/rules/0/id missing_field']);
  assert.deepEqual(located({ spec_version: '1', rules: [{ id: 'r' }] }), ['/rules/0/effect missing_field']);
  // A condition missing its op, input or args is refused, never read as a rule without a condition.
  assert.deepEqual(located(rule({})), ['/rules/0/when/op missing_field']);
  assert.deepEqual(located(rule({ op: 'eq', value: 'x' })), ['/rules/0/when/input missing_field']);
  assert.deepEqual(located(rule({ op: 'and' })), ['/rules/0/when/args missing_field']);
});

test('timestamps are real calendar instants; patterns refuse encoded dot segments and broken escapes', () => {
  for (const bad of ['1900-02-29T00:00:00Z', '2025-02-29T00:00:00Z', '2025-04-31T00:00:00Z', '2025-11-31T00:00:00Z']) assert.equal(parseTimestamp(bad), null, bad);
  for (const ok of ['2000-02-29T00:00:00Z', '2024-02-29T00:00:00Z', '2025-12-31T00:00:00Z']) assert.equal(typeof parseTimestamp(ok), 'number', ok);
  for (const bad of ['resource://a/%2e%2e/*', 'resource://a/.%2E/*', 'resource://a/%2e./*', 'resource://a/%zz/*', 'resource://a/%4/*']) assert.equal(parseResourcePattern(bad), null, bad);
  assert.deepEqual(parseResourcePattern('resource://a/%2e%2ex/*'), { kind: 'prefix', prefix: 'resource://a/%2e%2ex/' });
  // A submitted pattern may end inside a UTF-8 sequence, but only one that a valid lead byte starts.
  const submitted = (value: string) => validatePolicy(rule({ op: 'matches_resource', input: 'resource', value }), { submitted: true }).ok;
  assert.equal(submitted('resource://a/caf%C3*'), true);
  assert.equal(submitted('resource://a/caf%C0*'), false);
});

test('a resource literal with a character a URI cannot hold says to percent-encode it', () => {
  for (const when of [
    { op: 'matches_resource', input: 'resource', value: 'resource://docs/café/*' },
    { op: 'eq', input: 'resource', value: 'resource://docs/café' },
    { op: 'in', input: 'resource', values: ['resource://docs/a b'] },
  ]) {
    const result = validatePolicy(rule(when));
    assert.ok(!result.ok);
    assert.match(result.errors[0]!.message, /percent-encode/, JSON.stringify(when));
  }
  assert.ok(validatePolicy(rule({ op: 'eq', input: 'resource', value: 'resource://docs/caf%C3%A9' })).ok);
});
