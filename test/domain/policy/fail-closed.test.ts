// The evaluator and the validator fail closed on input no service caller sends but a direct caller
// could (a mutation audit in session 52 found these unpinned), and an exact resource pattern matches
// only its resource wherever its rule is indexed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePolicy, evaluate, validatePolicy, type PolicyInput } from '../../../src/domain/policy/index.ts';

function compile(rules: unknown[]) {
  const r = validatePolicy({ spec_version: '1', rules });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return compilePolicy(r.policy);
}
const base: PolicyInput = { action: 'pay', resource: 'resource://shop/orders/12', agent: 'did:key:zAlice', delegation_depth: 1, permit_commitment: 'ab'.repeat(32) };

test('an exact matches_resource pattern matches only that resource, also in a rule indexed by action', () => {
  const c = compile([{ id: 'r', effect: 'ALLOW', when: { op: 'and', args: [
    { op: 'eq', input: 'action', value: 'pay' },
    { op: 'matches_resource', input: 'resource', value: 'resource://shop/orders/1' },
  ] } }]);
  assert.equal(evaluate(c, base).decision, 'DENY');
  assert.equal(evaluate(c, { ...base, resource: 'resource://shop/orders/1' }).decision, 'ALLOW');
  const notDeny = compile([{ id: 'allow', effect: 'ALLOW' }, { id: 'deny', effect: 'DENY', when: { op: 'not', args: [{ op: 'matches_resource', input: 'resource', value: 'resource://shop/orders/1' }] } }]);
  assert.equal(evaluate(notDeny, base).decision, 'DENY');
});

test('a negative delegation_depth or a malformed permit_commitment is indeterminate (fail closed)', () => {
  const depth = compile([{ id: 'r', effect: 'ALLOW', when: { op: 'lt', input: 'delegation_depth', value: 2 } }]);
  assert.equal(evaluate(depth, { ...base, delegation_depth: -1 }).reason_code, 'indeterminate_invalid_input');
  const pc = compile([{ id: 'r', effect: 'ALLOW', when: { op: 'neq', input: 'permit_commitment', value: 'cd'.repeat(32) } }]);
  assert.equal(evaluate(pc, { ...base, permit_commitment: 'AB'.repeat(32) }).reason_code, 'indeterminate_invalid_input');
});

test('a non-object input or a throwing getter reads as invalid input', () => {
  const c = compile([{ id: 'r', effect: 'ALLOW', when: { op: 'eq', input: 'action', value: 'pay' } }]);
  assert.equal(evaluate(c, null as unknown as PolicyInput).reason_code, 'indeterminate_invalid_input');
  const hostile = { get action(): string { throw new Error('x'); } } as unknown as PolicyInput;
  assert.equal(evaluate(c, hostile).reason_code, 'indeterminate_invalid_input');
});

test('validatePolicy refuses a document that throws while read', () => {
  const doc = new Proxy({}, { ownKeys() { throw new Error('x'); }, get() { throw new Error('x'); } });
  assert.equal(validatePolicy(doc).ok, false);
});
