// Checks a mutation audit found unguarded: each test here fails on a single-line breakage of the
// verifier that no other test noticed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { delegatePermit } from '../../../src/domain/permit/delegate.ts';
import { verifyPermit } from '../../../src/domain/permit/verify.ts';
import { verifyPermitSignatures } from '../../../src/domain/permit/verify-signatures.ts';
import { signPermitClaims } from '../../../src/domain/permit/compact.ts';
import { permitIssuerId } from '../../../src/domain/permit/key-id.ts';
import { MAX_PRESENTED_LENGTH } from '../../../src/domain/permit/limits.ts';
import type { PermitClaims, VerifyResult } from '../../../src/domain/permit/types.ts';
import { KEY, PROJECT, T0, fixture, rootInput } from './helpers.ts';

function failure(r: VerifyResult) {
  assert.equal(r.ok, false, 'expected verification to fail');
  return r as Extract<VerifyResult, { ok: false }>;
}

test('a delegated permit expires at its own exp, not its root\'s: the chain is valid until the earliest exp', async () => {
  const f = await fixture();
  // Root valid T0..T0+3600; bob's link only until T0+600.
  const chain = await delegatePermit(f.root, {
    sub: f.bob.did, jti: 'pmt_short', iat: T0 + 10, exp: T0 + 600,
    gavel: { actions: ['payments.create'], resources: ['resource://payments/*'], max_per_request: { minor: 1, currency: 'EUR' }, budget: { minor: 1, currency: 'EUR' }, max_uses: 1 },
  }, f.alice.sign);
  const before = await verifyPermit(chain, f.ctx(f.bob.did, new Date((T0 + 599) * 1000)));
  assert.equal(before.ok, true);
  if (before.ok) assert.equal(before.permit.expires_at, T0 + 600);
  const after = failure(await verifyPermit(chain, f.ctx(f.bob.did, new Date((T0 + 600) * 1000))));
  assert.equal(after.check, 'expired', 'the root is still valid, the leaf is not: the chain is expired');
});

test('a root signed by the project key but naming another kid is refused (the kid must name the project key)', async () => {
  const f = await fixture();
  // The project key signs; only the header's kid differs, so the signature itself verifies.
  const input = rootInput(f.alice.did);
  const claims: PermitClaims = { iss: permitIssuerId(PROJECT), sub: input.sub, aud: input.aud, jti: input.jti, iat: input.iat, nbf: input.iat, exp: input.exp, gavel: { ...input.gavel } };
  const jws = await signPermitClaims(claims, 'gavel:project:prj_test#some-other-key', (m) => f.signer.sign(KEY, m));
  const r = failure(await verifyPermit(jws, f.ctx(f.alice.did)));
  assert.equal(r.check, 'signature');
  assert.match(r.detail, /names a key other than/);
});

test('a presented permit of exactly the maximum length is not refused as too large', async () => {
  const f = await fixture();
  const atMax = 'x'.repeat(MAX_PRESENTED_LENGTH);
  const r = failure(await verifyPermitSignatures(atMax, { projectId: PROJECT, projectPublicKey: f.projectKey }));
  assert.notEqual(r.check, 'too_large');
  const over = failure(await verifyPermitSignatures(`${atMax}x`, { projectId: PROJECT, projectPublicKey: f.projectKey }));
  assert.equal(over.check, 'too_large');
});
