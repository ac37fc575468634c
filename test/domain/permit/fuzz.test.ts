import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { verifyPermit } from '../../../src/domain/permit/verify.ts';
import { fixture } from './helpers.ts';

const EXPECTED = new Set([
  'malformed', 'too_large', 'chain_too_long', 'algorithm', 'header', 'claims', 'issuer', 'audience',
  'subject_mismatch', 'did_unresolvable', 'signature', 'chain_broken', 'delegation_widened',
]);

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

test('verifyPermit never throws on arbitrary strings and names a known check', async () => {
  const f = await fixture();
  const ctx = f.ctx(f.alice.did);
  const jsonish = fc.oneof(fc.jsonValue(), fc.string()).map(b64);
  const arbitraryInput = fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.string({ unit: 'binary', maxLength: 300 }),
    fc.array(fc.constantFrom('a', 'Z', '.', '~', '_', '-', '=', '+', '/', '0'), { maxLength: 200 }).map((cs) => cs.join('')),
    fc.tuple(jsonish, jsonish, jsonish).map((parts) => parts.join('.')),
    fc.array(fc.tuple(jsonish, jsonish, jsonish).map((p) => p.join('.')), { minLength: 1, maxLength: 10 }).map((ls) => ls.join('~')),
    fc.anything(),
  );
  await fc.assert(
    fc.asyncProperty(arbitraryInput, async (input) => {
      const r = await verifyPermit(input, ctx);
      assert.equal(r.ok, false);
      if (!r.ok) {
        assert.ok(EXPECTED.has(r.check), r.check);
        assert.equal(typeof r.detail, 'string');
      }
    }),
    { numRuns: 500 },
  );
});

test('any single-character change to a valid permit is refused without throwing', async () => {
  const f = await fixture();
  const ctx = f.ctx(f.alice.did);
  await fc.assert(
    fc.asyncProperty(fc.nat({ max: f.root.length - 1 }), fc.string({ minLength: 1, maxLength: 1 }), async (i, ch) => {
      const mutated = f.root.slice(0, i) + ch + f.root.slice(i + 1);
      const r = await verifyPermit(mutated, ctx);
      if (mutated === f.root) return;
      // Flipping the low bits of the last base64url char can decode to the same bytes; those
      // strings are refused as non-canonical, so no two strings verify as one permit.
      assert.equal(r.ok, false, `mutation at ${i} accepted`);
      if (!r.ok) assert.ok(EXPECTED.has(r.check), r.check);
    }),
    { numRuns: 300 },
  );
});
