import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSigner } from '../../src/signer/local.ts';

const spki = (raw: Uint8Array) => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }, format: 'jwk' });

test('signs with a persistent Ed25519 key kept private on disk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-keys-'));
  const signer = new LocalSigner(dir);
  const msg = new TextEncoder().encode('hello');
  const sig = await signer.sign('permits', msg);
  const pub = await signer.publicKey('permits');
  assert.equal(sig.length, 64);
  assert.equal(pub.length, 32);
  assert.ok(verify(null, msg, spki(pub), sig));
  assert.equal(statSync(join(dir, 'permits.pem')).mode & 0o777, 0o600);
  // A new signer over the same directory (a restart) holds the same key.
  assert.deepEqual(await new LocalSigner(dir).publicKey('permits'), pub);
  // Keys are separate per name.
  assert.notDeepEqual(await signer.publicKey('checkpoints'), pub);
});

test('refuses key names that could escape the directory', async () => {
  const signer = new LocalSigner(mkdtempSync(join(tmpdir(), 'gavel-keys-')));
  await assert.rejects(signer.sign('../x', new Uint8Array()), /invalid key name/);
});
