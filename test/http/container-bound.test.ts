// The bound on a large body's arrays and objects (http/body.ts, MAX_JSON_CONTAINERS) refuses no
// document the policy's own limits accept: a valid document may hold two per condition node (a
// `not` is an object and its `args`), and brackets inside strings are text, not containers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson, MAX_JSON_CONTAINERS } from '../../src/http/body.ts';
import { POLICY_LIMITS, validatePolicy } from '../../src/domain/policy/index.ts';

test('a valid document of 200,000 condition nodes, each `not` two containers, is read (not too_many_values)', () => {
  const rules = [];
  const chains = POLICY_LIMITS.maxTotalNodes / POLICY_LIMITS.maxDepth; // 6,250 chains of 32 nodes
  for (let i = 0; i < chains; i++) {
    let c: object = { op: 'eq', input: 'action', value: 'pay' };
    for (let d = 1; d < POLICY_LIMITS.maxDepth; d++) c = { op: 'not', args: [c] };
    rules.push({ id: `r${i}`, effect: 'ALLOW', when: c });
  }
  const document = { spec_version: '1', rules };
  assert.equal(validatePolicy(document).ok, true, 'the policy\'s own limits accept it');
  const body = Buffer.from(JSON.stringify({ note: 'deep', policy: document }));
  assert.ok(body.length < POLICY_LIMITS.maxDocumentBytes);
  assert.doesNotThrow(() => parseJson(body));
});

test('brackets inside strings are not counted; real containers past the bound still are', () => {
  const text = '['.repeat(500);
  const rules = Array.from({ length: 1_000 }, (_, i) => ({ id: `r${i}`, effect: 'DENY', when: { op: 'eq', input: 'action', value: text.slice(0, 64) } }));
  const body = Buffer.from(JSON.stringify({ note: text, policy: { spec_version: '1', rules }, pad: Array.from({ length: 1_000 }, () => `{"\\"[${text}`) }));
  assert.doesNotThrow(() => parseJson(body));
  // A string that opens with an escaped quote is still a string: the brackets after it are text.
  assert.doesNotThrow(() => parseJson(Buffer.from(`{"s":"\\"${'['.repeat(MAX_JSON_CONTAINERS + 1)}"}`)));
  // Objects and arrays alike are counted.
  for (const container of ['{}', '[]']) {
    const flood = Buffer.from(`[${`${container},`.repeat(MAX_JSON_CONTAINERS)}${container}]`);
    assert.throws(() => parseJson(flood), (e: { errors?: { code: string }[] }) => e.errors?.[0]?.code === 'too_many_values', container);
  }
});
