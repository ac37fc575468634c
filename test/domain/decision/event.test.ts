// The decision event's hand-written canonical JSON must be byte for byte what the generic RFC 8785
// canonicalizer gives for the same data, for every input: the leaf hash of every decision rests on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import canonicalize from 'canonicalize';
import { canonicalDecisionData, type DecisionEventData } from '../../../src/domain/decision/event.ts';

// Strings of any code points (controls, quotes, backslashes, non-BMP), and now and then a lone
// surrogate, which both must refuse.
const text = fc.oneof({ weight: 20, arbitrary: fc.string({ unit: fc.oneof(fc.constantFrom('"', '\\', '\u0000', '\u001f', '\u007f', '\u2028', 'é', '😀'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })) }) },
  { weight: 1, arbitrary: fc.constantFrom('\ud800', 'a\udfff', '\udc00\ud800') });
const nullable = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
const data: fc.Arbitrary<DecisionEventData> = fc.record({
  decision_id: text, request_id: text, agent: text, action: text, resource: text,
  amount: nullable(fc.record({ minor: fc.oneof(fc.maxSafeNat(), fc.constantFrom(0, -0, 1, -1, 0.5, 2 ** 53 - 1, 1e21, 1e-7)), currency: text })),
  intent: nullable(text), decision: fc.constantFrom('ALLOW', 'DENY', 'REQUIRE_APPROVAL'), reason_code: text, detail: nullable(text),
  policy_version: nullable(fc.nat()), matched_rules: fc.array(text, { maxLength: 5 }), permit_commitment: nullable(text),
  delegation_depth: fc.nat({ max: 16 }), request_time: text, approval_request_id: nullable(text),
  execution: fc.record({ merchant: text, operation: text, nonce: text }),
}, { requiredKeys: ['decision_id', 'request_id', 'agent', 'action', 'resource', 'amount', 'intent', 'decision', 'reason_code', 'detail',
  'policy_version', 'matched_rules', 'permit_commitment', 'delegation_depth', 'request_time', 'approval_request_id'] });

let compared = 0;
test('canonicalDecisionData equals canonicalize(data) for every decision event', () => {
  fc.assert(fc.property(data, (d) => {
    let expected: string | undefined;
    try { expected = canonicalize(d); } catch {
      // Lone surrogates: the canonicalizer refuses them, and so must this.
      assert.throws(() => canonicalDecisionData(d), TypeError);
      return;
    }
    assert.equal(canonicalDecisionData(d), expected);
    compared++;
  }), { numRuns: 3000 });
  assert.ok(compared > 1000, `most runs compare text (${compared})`);
});

test('canonicalDecisionData refuses a non-finite number instead of writing invalid JSON', () => {
  const d: DecisionEventData = { decision_id: 'd', request_id: 'r', agent: 'a', action: 'x', resource: 'resource://r', amount: { minor: Number.NaN, currency: 'EUR' },
    intent: null, decision: 'DENY', reason_code: 'c', detail: null, policy_version: null, matched_rules: [], permit_commitment: null, delegation_depth: 0, request_time: 't', approval_request_id: null };
  assert.throws(() => canonicalDecisionData(d), TypeError);
});
