import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { addPrefix, emptyPrefixTree, walkPrefixes } from '../../../src/domain/policy/prefix-tree.ts';
import { compilePolicy, evaluate, validatePolicy } from '../../../src/domain/policy/index.ts';

test('the prefix tree finds exactly the prefixes a text starts with, shortest first, each once', () => {
  // A small alphabet, so prefixes share stems, split edges and nest inside each other.
  const word = fc.string({ unit: fc.constantFrom('a', 'b', '/', 'é'), maxLength: 8 });
  fc.assert(fc.property(fc.array(word, { maxLength: 30 }), fc.array(word, { maxLength: 10 }), (prefixes, texts) => {
    const root = emptyPrefixTree();
    prefixes.forEach((p, rule) => addPrefix(root, p, rule));
    for (const text of texts) {
      const out: (readonly number[])[] = [];
      walkPrefixes(root, text, out);
      const expected = prefixes.map((p, rule) => ({ p, rule })).filter(({ p }) => text.startsWith(p))
        .sort((x, y) => x.p.length - y.p.length || x.rule - y.rule).map(({ rule }) => rule);
      assert.deepEqual(out.flat(), expected);
    }
  }), { numRuns: 2000 });
});

test('a resource costs one walk along it, not one probe per distinct prefix length', () => {
  // 500 prefixes of 500 lengths: a resource starting with none of them takes one probe (it took 500),
  // and one starting with half of them walks only their edges.
  const rules = Array.from({ length: 500 }, (_, k) => ({ id: `r${k}`, effect: 'ALLOW', when: { op: 'matches_resource', input: 'resource', value: `resource://${'a'.repeat(k + 1)}*` } }));
  const v = validatePolicy({ spec_version: '1', rules });
  assert.ok(v.ok);
  const compiled = compilePolicy(v.policy);
  const none = evaluate(compiled, { action: 'pay', agent: 'did:key:zA', resource: `resource://${'b'.repeat(500)}` });
  assert.deepEqual([none.decision, none.reason_code, none.steps], ['DENY', 'no_matching_rule', 1]);
  const half = evaluate(compiled, { action: 'pay', agent: 'did:key:zA', resource: `resource://${'a'.repeat(250)}${'b'.repeat(250)}` });
  // 250 edges walked, 250 rules considered, one condition node each.
  assert.deepEqual([half.decision, half.matched_rules.length, half.steps], ['ALLOW', 250, 750]);
});
