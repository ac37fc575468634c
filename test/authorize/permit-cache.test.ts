// The permit verification cache is keyed by the presented string, but a hit counts only for the
// project and project key it was verified under: another project, or a rotated key, verifies anew.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PermitVerificationCache } from '../../src/services/authorize/permit-cache.ts';
import { PROJECT, fixture } from '../domain/permit/helpers.ts';

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
