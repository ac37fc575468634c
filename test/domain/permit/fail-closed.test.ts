// Permit checks a mutation audit in session 52 found unpinned: verification fails closed when
// anything throws; a delegated link's kid is its issuer's DID or a DID URL of it, nothing that
// merely starts with it; checkAttenuation called alone keeps a child's limits in its parent's
// currency (decision 0301 addendum).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkAttenuation } from '../../../src/domain/permit/attenuation.ts';
import { verifyPermit } from '../../../src/domain/permit/verify.ts';
import { permitCommitment } from '../../../src/domain/permit/commitment.ts';
import type { PermitClaims } from '../../../src/domain/permit/types.ts';
import { T0, fixture, signUnchecked, decodePayload } from './helpers.ts';

test('checkAttenuation alone refuses a child limit in a currency the parent does not limit', () => {
  const claims = (gavel: PermitClaims['gavel']): PermitClaims => ({ iss: 'i', sub: 'did:key:z', aud: 'p', jti: 'j', iat: 0, nbf: 0, exp: 10, gavel });
  const parent = claims({ actions: ['*'], resources: ['resource://a/*'], budget: { minor: 100, currency: 'EUR' } });
  const child = claims({ actions: ['*'], resources: ['resource://a/*'], budget: { minor: 100, currency: 'EUR' }, max_per_request: { minor: 5, currency: 'USD' } });
  const r = checkAttenuation(parent, child, 1);
  assert.equal(r?.check, 'delegation_widened');
});

test('verifyPermit answers verification_error, not ok, when something throws', async () => {
  const f = await fixture();
  class BadDate extends Date { override getTime(): number { throw new Error('boom'); } }
  const r = await verifyPermit(f.root, f.ctx(f.alice.did, new BadDate((T0 + 60) * 1000)));
  assert.equal(r.ok, false);
  assert.equal((r as { check: string }).check, 'verification_error');
});

test('a delegated link whose kid only starts with the issuer DID (no "#") is refused as header', async () => {
  const f = await fixture();
  const p = decodePayload(f.root);
  const child = { iss: f.alice.did, sub: f.bob.did, aud: p.aud, jti: 'c1', iat: T0, nbf: T0, exp: T0 + 3600,
    gavel: { actions: ['payments.create'], resources: ['resource://payments/*'], max_per_request: { minor: 1, currency: 'EUR' }, budget: { minor: 1, currency: 'EUR' }, max_uses: 1, parent: permitCommitment(f.root) } };
  const ok = await signUnchecked(child, `${f.alice.did}#${f.alice.did.slice(8)}`, f.alice.sign);
  assert.equal((await verifyPermit(`${f.root}~${ok}`, f.ctx(f.bob.did))).ok, true);
  const bad = await signUnchecked(child, `${f.alice.did}x`, f.alice.sign);
  const r = await verifyPermit(`${f.root}~${bad}`, f.ctx(f.bob.did));
  assert.equal((r as { check?: string }).check, 'header');
});
