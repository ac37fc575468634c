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
import { issuePermit } from '../../../src/domain/permit/issue.ts';
import { PermitError } from '../../../src/domain/permit/types.ts';
import type { PermitClaims, VerifyResult } from '../../../src/domain/permit/types.ts';
import { KEY, PROJECT, T0, decodePayload, fixture, memorySigner, newAgent, rootInput } from './helpers.ts';

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

test('a failure detail shows a name taken from the permit bounded and with control characters escaped', async () => {
  const f = await fixture();
  const [h, p, s] = f.root.split('.') as [string, string, string];
  const payload = { ...JSON.parse(Buffer.from(p, 'base64url').toString('utf8')), [`\u0007${'n'.repeat(300)}`]: 1 };
  const unknown = failure(await verifyPermit(`${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`, f.ctx(f.alice.did)));
  assert.equal(unknown.check, 'claims');
  assert.ok(!unknown.detail.includes('\u0007') && unknown.detail.includes('\\u0007'), unknown.detail);
  assert.ok(unknown.detail.length < 80, `the detail is bounded: ${unknown.detail.length} characters`);
  const header = Buffer.from(JSON.stringify({ alg: `HS${'x'.repeat(300)}`, typ: 'gavel-permit+jwt', kid: 'k' })).toString('base64url');
  const alg = failure(await verifyPermit(`${header}.${p}.${s}`, f.ctx(f.alice.did)));
  assert.equal(alg.check, 'algorithm');
  assert.ok(alg.detail.length < 150, `the detail is bounded: ${alg.detail.length} characters`);
});

test('a signer that does not return a 64-byte signature fails issuance instead of yielding a permit that never verifies', async () => {
  const f = await fixture();
  const input = rootInput(f.alice.did);
  const claims: PermitClaims = { iss: permitIssuerId(PROJECT), sub: input.sub, aud: input.aud, jti: input.jti, iat: input.iat, nbf: input.iat, exp: input.exp, gavel: { ...input.gavel } };
  await assert.rejects(signPermitClaims(claims, 'kid', async () => new Uint8Array(63)), (e: unknown) => e instanceof PermitError && e.code === 'signature');
});

test('delegating a permit not valid yet: the link becomes valid with its parent by default, and verifies then', async () => {
  const signer = memorySigner();
  const alice = newAgent();
  const bob = newAgent();
  const later = T0 + 1000;
  const root = await issuePermit(signer, KEY, rootInput(alice.did, { nbf: later }));
  const chain = await delegatePermit(root, { sub: bob.did, jti: 'pmt_child', iat: T0 + 10, gavel: { actions: ['payments.create'], resources: ['resource://payments/*'], max_per_request: { minor: 1, currency: 'EUR' }, budget: { minor: 1, currency: 'EUR' }, max_uses: 1 } }, alice.sign);
  assert.equal(decodePayload(chain.split('~').at(-1)!).nbf, later);
  const r = await verifyPermit(chain, { projectId: PROJECT, projectPublicKey: await signer.publicKey(KEY), now: new Date(later * 1000), expectedAgent: bob.did });
  assert.equal(r.ok, true);
});

test('a delegated link names its issuer\'s key as a DID URL, and delegation refuses a chain longer than a presented permit may be', async () => {
  const f = await fixture();
  const gavel = { actions: ['payments.create'], resources: ['resource://payments/*'], max_per_request: { minor: 1, currency: 'EUR' }, budget: { minor: 1, currency: 'EUR' }, max_uses: 1 };
  const chain = await delegatePermit(f.root, { sub: f.bob.did, jti: 'pmt_child', iat: T0 + 10, gavel }, f.alice.sign);
  const header = JSON.parse(Buffer.from(chain.split('~').at(-1)!.split('.')[0]!, 'base64url').toString('utf8'));
  assert.equal(header.kid, `${f.alice.did}#${f.alice.did.slice('did:key:'.length)}`);
  // A root close to the bound: any delegated link pushes the chain past it.
  const long = Array.from({ length: 20 }, (_, i) => `resource://payments/${i}/${'p'.repeat(400)}`);
  const wide = await issuePermit(f.signer, KEY, rootInput(f.alice.did, { gavel: { ...rootInput(f.alice.did).gavel, resources: long } }));
  assert.ok(wide.length < MAX_PRESENTED_LENGTH && wide.length > MAX_PRESENTED_LENGTH / 2);
  await assert.rejects(delegatePermit(wide, { sub: f.bob.did, jti: 'pmt_child', iat: T0 + 10, gavel: { ...gavel, resources: long } }, f.alice.sign),
    (e: unknown) => e instanceof PermitError && e.code === 'too_large');
});

test('issuance refuses, before signing, a root permit longer than a presented permit may be: it would never verify', async () => {
  const f = await fixture();
  let signed = 0;
  const counting: typeof f.signer = { publicKey: (name) => f.signer.publicKey(name), sign: (name, m) => { signed++; return f.signer.sign(name, m); } };
  // 27 patterns of about 430 characters, and one more whose length the loop below grows a character at a time.
  const fixed = Array.from({ length: 27 }, (_, i) => `resource://payments/${String(i).padStart(2, '0')}/${'p'.repeat(400)}*`);
  const issue = (tail: number) => issuePermit(counting, KEY, rootInput(f.alice.did, { gavel: { actions: ['payments.create'], resources: [...fixed, `resource://tail/${'t'.repeat(tail)}`] } }));
  await assert.rejects(issue(480), (e: unknown) => e instanceof PermitError && e.code === 'too_large' && /at most 16384/.test(e.message));
  assert.equal(signed, 0, 'nothing is signed');
  // The largest that is issued verifies, and one character more is refused: the bound is the verifier's.
  let largest = '';
  for (let tail = 1; tail < 480; tail++) {
    try { largest = await issue(tail); } catch (e) { assert.ok(e instanceof PermitError && e.code === 'too_large'); break; }
  }
  assert.ok(largest.length <= MAX_PRESENTED_LENGTH && largest.length > MAX_PRESENTED_LENGTH - 4, `${largest.length} characters`);
  assert.equal((await verifyPermit(largest, f.ctx(f.alice.did))).ok, true);
});
