import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkCoverage } from '../../../src/domain/permit/coverage.ts';
import { liveLimits } from '../../../src/domain/permit/live-limits.ts';
import { delegatePermit } from '../../../src/domain/permit/delegate.ts';
import { issuePermit } from '../../../src/domain/permit/issue.ts';
import { verifyPermit } from '../../../src/domain/permit/verify.ts';
import { patternCovers, patternMatches } from '../../../src/domain/permit/pattern.ts';
import type { VerifiedPermit } from '../../../src/domain/permit/types.ts';
import { KEY, T0, fixture, rootInput } from './helpers.ts';

async function rootPermit(): Promise<VerifiedPermit> {
  const f = await fixture();
  const r = await verifyPermit(f.root, f.ctx(f.alice.did));
  assert.ok(r.ok);
  return r.permit;
}

const eur = (minor: number) => ({ minor, currency: 'EUR' });

/** A verified root permit granting every action on every resource, with `limits` beside. */
async function anyActionPermit(limits: { budget?: { minor: number; currency: string } } = {}): Promise<VerifiedPermit> {
  const f = await fixture();
  const root = await issuePermit(f.signer, KEY, rootInput(f.alice.did, { gavel: { actions: ['*'], resources: ['resource://*'], ...limits } }));
  const r = await verifyPermit(root, f.ctx(f.alice.did));
  assert.ok(r.ok);
  return r.permit;
}
const checkOf = (r: ReturnType<typeof checkCoverage>) => (r.ok ? 'ok' : r.check);

test('coverage: action, resource and amount within the permit', async () => {
  const p = await rootPermit();
  assert.deepEqual(checkCoverage(p, { action: 'payments.create', resource: 'resource://payments/eu/1', amount: eur(10_000) }), { ok: true });
  assert.deepEqual(checkCoverage(p, { action: 'invoices.read', resource: 'resource://invoices/42', amount: eur(0) }), { ok: true });
});

test('coverage fails in each dimension with its own code', async () => {
  const p = await rootPermit();
  const ok = { action: 'payments.create', resource: 'resource://payments/1', amount: eur(1) };
  assert.equal(checkOf(checkCoverage(p, { ...ok, action: 'payments.refund' })), 'action_not_covered');
  assert.equal(checkOf(checkCoverage(p, { ...ok, action: '' })), 'action_not_covered');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'resource://invoices/43' })), 'resource_not_covered');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'resource://invoices/42/x' })), 'resource_not_covered');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'resource://payment' })), 'resource_not_covered');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'resource://payments/../admin' })), 'resource_invalid');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'resource://payments/%2E%2e/admin' })), 'resource_invalid');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'resource://payments/./1' })), 'resource_invalid');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'resource://payments/%2e' })), 'resource_invalid');
  for (const escape of ['x%2F..%2F..%2Fadmin', '..%2fadmin', 'a%5Cb', 'a%252Fb', 'a%00', 'a%7f']) {
    assert.equal(checkOf(checkCoverage(p, { ...ok, resource: `resource://payments/${escape}` })), 'resource_invalid', escape);
  }
  assert.deepEqual(checkCoverage(p, { ...ok, resource: 'resource://payments/v1.5/%20x' }), { ok: true }, 'a dot or an escape that makes no dot segment is judged by the patterns');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'resource://payments/v1.5/%2e%2ex' })), 'resource_invalid', 'an escaped dot is another spelling of a dot');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'resource://payments/*' })), 'resource_invalid');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: 'https://payments/1' })), 'resource_invalid');
  assert.equal(checkOf(checkCoverage(p, { ...ok, resource: `resource://payments/${'a'.repeat(500)}` })), 'resource_invalid');
  assert.equal(checkOf(checkCoverage(p, { ...ok, amount: eur(10_001) })), 'amount_exceeds_per_request');
  assert.equal(checkOf(checkCoverage(p, { ...ok, amount: { minor: 1, currency: 'USD' } })), 'currency_mismatch');
  assert.equal(checkOf(checkCoverage(p, { ...ok, amount: { minor: 1.5, currency: 'EUR' } })), 'amount_invalid');
  assert.equal(checkOf(checkCoverage(p, { ...ok, amount: { minor: -1, currency: 'EUR' } })), 'amount_invalid');
  assert.equal(checkOf(checkCoverage(p, { ...ok, amount: { minor: '1', currency: 'EUR' } as never })), 'amount_invalid');
  assert.equal(checkOf(checkCoverage(p, { action: ok.action, resource: ok.resource })), 'amount_required');
});

test('a single request above the whole budget is refused without the store', async () => {
  const p = await anyActionPermit({ budget: eur(100) });
  assert.equal(checkOf(checkCoverage(p, { action: 'anything', resource: 'resource://a', amount: eur(100) })), 'ok');
  assert.equal(checkOf(checkCoverage(p, { action: 'anything', resource: 'resource://a', amount: eur(101) })), 'amount_exceeds_budget');
  assert.equal(checkOf(checkCoverage(p, { action: 'anything', resource: 'resource://a' })), 'amount_required');
});

test('a permit without money limits covers requests with or without an amount', async () => {
  const f = await fixture();
  const root = await issuePermit(f.signer, KEY, rootInput(f.alice.did, { gavel: { actions: ['docs.read'], resources: ['resource://docs/*'] } }));
  const r = await verifyPermit(root, f.ctx(f.alice.did));
  assert.ok(r.ok);
  assert.equal(checkOf(checkCoverage(r.permit, { action: 'docs.read', resource: 'resource://docs/a' })), 'ok');
  assert.equal(checkOf(checkCoverage(r.permit, { action: 'docs.read', resource: 'resource://docs/a', amount: { minor: 5, currency: 'USD' } })), 'ok');
  assert.deepEqual(liveLimits(r.permit), { revocation: [r.permit.commitment], counters: [] });
});

test('coverage of a delegated permit is the leaf grant; every ancestor is checked too', async () => {
  const f = await fixture();
  const chain = await delegatePermit(
    f.root,
    { sub: f.bob.did, jti: 'c', iat: T0, gavel: { actions: ['payments.create'], resources: ['resource://payments/eu/*'], max_per_request: eur(500), budget: eur(1_000), max_uses: 2 } },
    f.alice.sign,
  );
  const r = await verifyPermit(chain, f.ctx(f.bob.did));
  assert.ok(r.ok);
  const p = r.permit;
  assert.equal(checkOf(checkCoverage(p, { action: 'payments.create', resource: 'resource://payments/eu/1', amount: eur(500) })), 'ok');
  assert.equal(checkOf(checkCoverage(p, { action: 'invoices.read', resource: 'resource://invoices/42', amount: eur(1) })), 'action_not_covered');
  assert.equal(checkOf(checkCoverage(p, { action: 'payments.create', resource: 'resource://payments/us/1', amount: eur(1) })), 'resource_not_covered');
  assert.equal(checkOf(checkCoverage(p, { action: 'payments.create', resource: 'resource://payments/eu/1', amount: eur(501) })), 'amount_exceeds_per_request');

  // A hand-assembled VerifiedPermit whose leaf is wider than the root is still bounded by the root.
  const forged: VerifiedPermit = structuredClone(p);
  forged.links[1]!.claims.gavel.actions = ['*'];
  const forgedResult = checkCoverage(forged, { action: 'admin.delete', resource: 'resource://payments/eu/1', amount: eur(1) });
  assert.equal(checkOf(forgedResult), 'action_not_covered');
  assert.equal(forgedResult.ok ? -1 : forgedResult.link, 0);
});

test('liveLimits lists every commitment for revocation and every counter to spend, root first', async () => {
  const f = await fixture();
  const toBob = await delegatePermit(
    f.root,
    { sub: f.bob.did, jti: 'b', iat: T0, gavel: { actions: ['payments.create'], resources: ['resource://payments/*'], max_per_request: eur(500), budget: eur(1_000), max_uses: 5 } },
    f.alice.sign,
  );
  const toCarol = await delegatePermit(
    toBob,
    { sub: f.carol.did, jti: 'c', iat: T0, gavel: { actions: ['payments.create'], resources: ['resource://payments/*'], max_per_request: eur(500), budget: eur(1_000), max_uses: 5 } },
    f.bob.sign,
  );
  const r = await verifyPermit(toCarol, f.ctx(f.carol.did));
  assert.ok(r.ok);
  const live = liveLimits(r.permit);
  assert.deepEqual(live.revocation, r.permit.chain);
  assert.equal(live.revocation.length, 3);
  // Each link's budget counts spending through every descendant: three counters, all spent.
  assert.deepEqual(
    live.counters.map((c) => [c.link, c.commitment, c.budget, c.max_uses]),
    [
      [0, r.permit.chain[0], eur(50_000), 10],
      [1, r.permit.chain[1], eur(1_000), 5],
      [2, r.permit.chain[2], eur(1_000), 5],
    ],
  );
});

test('pattern matching and covering follow prefix-set semantics', () => {
  assert.equal(patternMatches('resource://a/*', 'resource://a/'), true);
  assert.equal(patternMatches('resource://a/*', 'resource://a/b/c'), true);
  assert.equal(patternMatches('resource://a/*', 'resource://a'), false);
  assert.equal(patternMatches('resource://a', 'resource://a'), true);
  assert.equal(patternMatches('resource://a', 'resource://ab'), false);
  assert.equal(patternCovers('resource://a/*', 'resource://a/b/*'), true);
  assert.equal(patternCovers('resource://a/*', 'resource://a/b'), true);
  assert.equal(patternCovers('resource://a/b*', 'resource://a/*'), false);
  assert.equal(patternCovers('resource://a/b', 'resource://a/b*'), false);
  assert.equal(patternCovers('resource://a/b', 'resource://a/b'), true);
  assert.equal(patternCovers('resource://*', 'resource://anything*'), true);
});

test('checkCoverage answers a value, never a TypeError, for a hostile request', async () => {
  const p = await rootPermit();
  for (const bad of [null, undefined, 42, { action: 1, resource: 2 }, { action: 'payments.create', resource: null }, { action: 'payments.create', resource: 'resource://payments/1', amount: null }]) {
    const r = checkCoverage(p, bad as never);
    assert.equal(r.ok, false, JSON.stringify(bad));
  }
});

test('an issuable pattern may end inside an escape or a UTF-8 sequence; the rest of it is judged as a request', async () => {
  const { isIssuablePattern } = await import('../../../src/domain/permit/pattern.ts');
  for (const ok of ['resource://files/caf%C3*', 'resource://files/%2*', 'resource://files/%*', 'resource://files/%E2%82*', 'resource://*']) assert.equal(isIssuablePattern(ok), true, ok);
  for (const bad of ['resource://a/%41*', 'resource://a/%c3*', 'resource://FILES/*', 'resource://a/b;c*', 'resource://a/%2F*', 'resource://a/%C0%AF*', 'resource://a/%C3%A9%A9*', 'resource://a/%80*']) assert.equal(isIssuablePattern(bad), false, bad);
});

test('an empty action is covered by no permit, not even one granting every action ("*")', async () => {
  const p = await anyActionPermit();
  assert.equal(checkOf(checkCoverage(p, { action: 'anything', resource: 'resource://a' })), 'ok');
  assert.equal(checkOf(checkCoverage(p, { action: '', resource: 'resource://a' })), 'action_not_covered');
});
