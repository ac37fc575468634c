// The permit verification cache is keyed by the presented string (filed by its tail, compared whole), but a hit counts only for the
// project and project key it was verified under: another project, or a rotated key, verifies anew.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PermitVerificationCache } from '../../src/services/authorize/permit-cache.ts';
import { KEY, PROJECT, fixture, rootInput } from '../domain/permit/helpers.ts';
import { issuePermit } from '../../src/domain/permit/issue.ts';

test('permit cache: a hit only for the same project and key; failures are not cached', async () => {
  const f = await fixture();
  const cache = new PermitVerificationCache();
  const first = await cache.verify(f.root, PROJECT, f.projectKey);
  assert.equal(first.ok, true);
  assert.equal(await cache.verify(f.root, PROJECT, Uint8Array.from(f.projectKey)), first, 'same pair: the cached result');
  const otherKey = Uint8Array.from(f.projectKey);
  otherKey[0]! ^= 1;
  const wrongKey = await cache.verify(f.root, PROJECT, otherKey);
  assert.equal(wrongKey.ok, false, 'another key: verified anew, and it fails');
  const otherProject = await cache.verify(f.root, 'prj_other', f.projectKey);
  assert.equal(otherProject.ok, false, 'another project: verified anew, and it fails');
  assert.equal(await cache.verify(f.root, PROJECT, f.projectKey), first, 'the good entry survived the failures');
});

test('permit cache: when full, the oldest entry not hit since it was last passed over goes first (second chance)', async () => {
  const f = await fixture();
  const permit = (jti: string) => issuePermit(f.signer, KEY, rootInput(f.alice.did, { jti }));
  const [a, b, c, d] = await Promise.all(['pmt_a', 'pmt_b', 'pmt_c', 'pmt_d'].map(permit));
  const cache = new PermitVerificationCache({ maxEntries: 2 });
  assert.equal((await cache.verify(a!, PROJECT, f.projectKey)).ok, true);
  assert.equal((await cache.verify(b!, PROJECT, f.projectKey)).ok, true);
  assert.ok(cache.cached(a!, PROJECT, f.projectKey), 'a is hit, so it gets a second chance');
  assert.equal((await cache.verify(c!, PROJECT, f.projectKey)).ok, true);
  assert.equal(cache.size, 2);
  assert.ok(cache.cached(a!, PROJECT, f.projectKey), 'a, the oldest but hit, stayed');
  assert.equal(cache.cached(b!, PROJECT, f.projectKey), undefined, 'b, never hit, went');
  assert.ok(cache.cached(c!, PROJECT, f.projectKey));
  // Every entry hit: one sweep clears the marks, then the oldest goes.
  assert.equal((await cache.verify(d!, PROJECT, f.projectKey)).ok, true);
  assert.equal(cache.size, 2);
  assert.equal(cache.cached(a!, PROJECT, f.projectKey), undefined, 'a went after its second chance was spent');
  assert.ok(cache.cached(c!, PROJECT, f.projectKey));
  assert.ok(cache.cached(d!, PROJECT, f.projectKey));
});

test('permit cache: a string that ends like a cached permit is no hit; it is verified anew, fails, and the entry stays', async () => {
  const f = await fixture();
  const cache = new PermitVerificationCache();
  const first = await cache.verify(f.root, PROJECT, f.projectKey);
  assert.equal(first.ok, true);
  // The same signature under other claims: the same tail, another permit.
  const [, payload, signature] = f.root.split('.') as [string, string, string];
  const forged = `${Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'JWT' })).toString('base64url')}.${payload}x.${signature}`;
  assert.equal(forged.slice(-32), f.root.slice(-32));
  assert.equal(cache.cached(forged, PROJECT, f.projectKey), undefined, 'a shared tail is not a hit');
  assert.equal((await cache.verify(forged, PROJECT, f.projectKey)).ok, false);
  assert.equal(cache.cached(f.root, PROJECT, f.projectKey), first, 'the cached permit still hits');
  assert.equal(cache.size, 1);
});

test('permit cache: bounded by the characters it holds as well as by count; what it let go verifies again, the same', async () => {
  const f = await fixture();
  const permits = await Promise.all(Array.from({ length: 6 }, (_, i) => issuePermit(f.signer, KEY, rootInput(f.alice.did, { jti: `pmt_${i}` }))));
  const length = permits[0]!.length;
  const cache = new PermitVerificationCache({ maxChars: 3 * length + 10 });
  for (const p of permits) assert.equal((await cache.verify(p, PROJECT, f.projectKey)).ok, true);
  assert.equal(cache.size, 3, 'three permits fit in the characters allowed');
  assert.ok(cache.chars <= 3 * length + 10);
  assert.equal(cache.cached(permits[0]!, PROJECT, f.projectKey), undefined, 'the oldest went');
  const again = await cache.verify(permits[0]!, PROJECT, f.projectKey);
  assert.equal(again.ok, true, 'a miss only verifies again');
  assert.equal(again.ok && again.permit.links[0]!.claims.jti, 'pmt_0');
  assert.equal(cache.size, 3);
});

test('permit cache: the characters it counts are those of the permits it holds, up to exactly maxChars, through second chances and a permit that displaces two', async () => {
  const f = await fixture();
  const permit = (jti: string) => issuePermit(f.signer, KEY, rootInput(f.alice.did, { jti }));
  const [a, b, c, d] = await Promise.all(['pmt_a', 'pmt_b', 'pmt_c', 'pmt_d'].map(permit)) as [string, string, string, string];
  const length = a.length;
  const cache = new PermitVerificationCache({ maxChars: 3 * length });
  for (const p of [a, b, c]) assert.equal((await cache.verify(p, PROJECT, f.projectKey)).ok, true);
  assert.equal(cache.size, 3, 'three permits of exactly maxChars fit');
  assert.equal(cache.chars, 3 * length);
  assert.ok(cache.cached(a, PROJECT, f.projectKey), 'a is hit, so it is passed over once');
  assert.equal((await cache.verify(d, PROJECT, f.projectKey)).ok, true);
  assert.equal(cache.size, 3);
  assert.equal(cache.chars, 3 * length, 'a passed over and kept, b let go: three permits held, three counted');
  // Longer than one permit, no longer than two: two must go for it (c, then a, its second chance spent).
  const base = rootInput(f.alice.did, { jti: 'pmt_e' });
  const e = await issuePermit(f.signer, KEY, { ...base, gavel: { ...base.gavel, resources: [...base.gavel.resources, `resource://docs/${'e'.repeat(Math.ceil(length / 2))}`] } });
  assert.ok(e.length > length && e.length <= 2 * length, `a permit of ${e.length} characters`);
  assert.equal((await cache.verify(e, PROJECT, f.projectKey)).ok, true);
  assert.equal(cache.size, 2);
  assert.equal(cache.chars, length + e.length);
  assert.ok(cache.cached(d, PROJECT, f.projectKey) && cache.cached(e, PROJECT, f.projectKey), 'd and e are held');
});

test('permit cache: one permit verified twice at once is held and counted once', async () => {
  const f = await fixture();
  const cache = new PermitVerificationCache({ maxEntries: 1 });
  const both = await Promise.all([cache.verify(f.root, PROJECT, f.projectKey), cache.verify(f.root, PROJECT, f.projectKey)]);
  assert.deepEqual(both.map((r) => r.ok), [true, true]);
  assert.equal(cache.size, 1);
  assert.equal(cache.chars, f.root.length);
});
