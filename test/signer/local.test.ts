import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import fs, { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSigner, SigningKeyDamaged } from '../../src/signer/local.ts';

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

test('the keys directory it creates with the first key is its owner\'s alone, whatever the umask; asking whether a key is held makes nothing', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'gavel-keys-')), 'keys');
  const signer = new LocalSigner(dir);
  assert.equal(await signer.heldPublicKey('permits'), undefined);
  assert.ok(!fs.existsSync(dir), 'no directory before a key is made');
  const umask = process.umask(0o022);
  try { await signer.publicKey('permits'); } finally { process.umask(umask); }
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.deepEqual(await signer.heldPublicKey('permits'), await new LocalSigner(dir).heldPublicKey('permits'));
});

test('refuses key names that could escape the directory', async () => {
  const signer = new LocalSigner(mkdtempSync(join(tmpdir(), 'gavel-keys-')));
  await assert.rejects(signer.sign('../x', new Uint8Array()), /invalid key name/);
});

/** Runs `body` with fs.writeSync, which writes a new key file's text, replaced (imported by name, hence the sync). */
async function withWriteSync(replacement: (fd: number, text: string) => number, body: () => Promise<void>): Promise<void> {
  mock.method(fs, 'writeSync', replacement as typeof fs.writeSync);
  syncBuiltinESMExports();
  try { await body(); } finally { mock.restoreAll(); syncBuiltinESMExports(); }
}

test('a key write that fails midway leaves no key file behind: the next use makes a whole key', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-keys-'));
  const realWrite = fs.writeSync;
  // A full disk (or a crash) after part of the PEM reached the file.
  await withWriteSync((fd: number, data: string) => {
    realWrite(fd, data.slice(0, 40));
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  }, async () => {
    await assert.rejects(new LocalSigner(dir).publicKey('permits'), /ENOSPC/);
  });
  assert.deepEqual(readdirSync(dir), [], 'neither half a key nor a temporary file remains');
  assert.equal((await new LocalSigner(dir).publicKey('permits')).length, 32);
});

test('two signers creating one key at once agree on it: the later one takes the key the first wrote', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-keys-'));
  const realWrite = fs.writeSync;
  let other: Promise<Uint8Array> | undefined;
  let raced = false;
  // Another process creates the key while this one is writing its own.
  await withWriteSync((fd: number, data: string) => {
    if (!raced) {
      raced = true;
      other = new LocalSigner(dir).publicKey('permits');
    }
    return realWrite(fd, data);
  }, async () => {
    const mine = await new LocalSigner(dir).publicKey('permits');
    assert.deepEqual(mine, await other);
  });
  assert.deepEqual(await new LocalSigner(dir).publicKey('permits'), await other, 'the file holds the key both use');
  assert.deepEqual(readdirSync(dir), ['permits.pem']);
});

test('a key file that holds another kind of key, or names a path, is refused', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-keys-'));
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(join(dir, 'permits.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  await assert.rejects(new LocalSigner(dir).sign('permits', new Uint8Array([1])), (e: unknown) => e instanceof SigningKeyDamaged && e.message === `${join(dir, 'permits.pem')} holds a ec key, not an Ed25519 one`);
  // A damaged file is said as such, naming it, and never replaced by a new key.
  writeFileSync(join(dir, 'log.pem'), '');
  await assert.rejects(new LocalSigner(dir).publicKey('log'), (e: unknown) => e instanceof SigningKeyDamaged && e.message.startsWith(`${join(dir, 'log.pem')} holds no readable private key (empty or damaged): restore it`));
  assert.equal(statSync(join(dir, 'log.pem')).size, 0);
  for (const name of ['a/../../x', 'sub/x', '.hidden', '', 'Upper', 'x'.repeat(102)]) {
    await assert.rejects(new LocalSigner(dir).publicKey(name), /invalid key name/, name);
  }
  assert.equal((await new LocalSigner(dir).publicKey('x'.repeat(101))).length, 32, 'a name of 101 characters is allowed');
});

test('a new key reaches the disk before it takes its name, and its name reaches the disk too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-keys-'));
  const calls: string[] = [];
  const { fsyncSync: realFsync, linkSync: realLink } = fs;
  mock.method(fs, 'fsyncSync', (fd: number) => { calls.push('fsync'); realFsync(fd); });
  mock.method(fs, 'linkSync', (from: string, to: string) => { calls.push(`link ${to.slice(dir.length + 1)}`); realLink(from, to); });
  syncBuiltinESMExports();
  try { await new LocalSigner(dir).publicKey('permits'); } finally { mock.restoreAll(); syncBuiltinESMExports(); }
  // The key's bytes, then its name, then the directory entry: a power loss leaves no key or a whole one.
  assert.deepEqual(calls, ['fsync', 'link permits.pem', 'fsync']);
});

test('a key file others can read is used, and warned about once, naming its mode; one kept 0600 is not', async () => {
  const { loadOrCreateWitnessKey } = await import('../../src/witness/key.ts');
  const dir = mkdtempSync(join(tmpdir(), 'gavel-keys-'));
  const warnings: string[] = [];
  // Only this test's files: another test's may be warned about meanwhile (warnings come on a later tick).
  const onWarning = (w: Error & { code?: string }) => { if (w.code === 'GAVEL_KEY_FILE_MODE' && w.message.startsWith(dir)) warnings.push(w.message); };
  process.on('warning', onWarning);
  try {
    const pub = await new LocalSigner(dir).publicKey('permits');
    const witness = loadOrCreateWitnessKey(join(dir, 'witness')).publicKey;
    // A restart over keys kept private: nothing to say.
    await new LocalSigner(dir).publicKey('permits');
    loadOrCreateWitnessKey(join(dir, 'witness'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(warnings, []);
    // Copied in as 0644 (or 0660): still the same keys, and each file said once.
    fs.chmodSync(join(dir, 'permits.pem'), 0o644);
    fs.chmodSync(join(dir, 'witness', 'witness-key.pem'), 0o660);
    assert.deepEqual(await new LocalSigner(dir).publicKey('permits'), pub);
    assert.deepEqual(loadOrCreateWitnessKey(join(dir, 'witness')).publicKey, witness);
    await new LocalSigner(dir).publicKey('permits');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(warnings, [
      `${join(dir, 'permits.pem')} holds a private key and has mode 0644: other users of this machine can read it; run chmod 600 on it`,
      `${join(dir, 'witness', 'witness-key.pem')} holds a private key and has mode 0660: other users of this machine can read it; run chmod 600 on it`,
    ]);
  } finally {
    process.off('warning', onWarning);
  }
});
