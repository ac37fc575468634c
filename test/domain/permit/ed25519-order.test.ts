import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { isWeakEd25519Key } from '../../../src/domain/permit/ed25519-order.ts';
import { didKeyFromPublicKey, didKeyIsUsable, didKeyIsWellFormed } from '../../../src/domain/permit/index.ts';

const hex = (h: string) => new Uint8Array(Buffer.from(h, 'hex'));
/** The eight points of small order, as libsodium's blocklist encodes them, and the non-canonical encodings of 0 and 1. */
const SMALL_ORDER = [
  '0100000000000000000000000000000000000000000000000000000000000000', // the identity (order 1)
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // (0, -1): order 2
  '0000000000000000000000000000000000000000000000000000000000000000', // (±√-1, 0): order 4
  '0000000000000000000000000000000000000000000000000000000000000080',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa',
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p: 0, not canonical
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p + 1: 1, not canonical
];

test('small-order and non-canonical Ed25519 keys are weak; generated keys are not', () => {
  for (const h of SMALL_ORDER) assert.equal(isWeakEd25519Key(hex(h)), true, h);
  for (let i = 0; i < 20; i++) {
    const x = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    assert.equal(isWeakEd25519Key(new Uint8Array(Buffer.from(x, 'base64url'))), false, x);
  }
  // Every encoding of a y from p to 2^255 - 1 is non-canonical, whichever point it would name.
  const P = 2n ** 255n - 19n;
  for (let k = 0n; k < 19n; k++) {
    const y = P + k;
    const bytes = new Uint8Array(32);
    for (let i = 0; i < 32; i++) bytes[i] = Number((y >> BigInt(8 * i)) & 0xffn);
    assert.equal(isWeakEd25519Key(bytes), true, `y = p + ${k}`);
  }
  // y = 2 is on no point of the curve.
  assert.equal(isWeakEd25519Key(hex('02'.padEnd(64, '0'))), true);
  assert.equal(isWeakEd25519Key(new Uint8Array(31)), true);
});

test('a did:key of a small-order point is well formed but not usable', () => {
  const weak = didKeyFromPublicKey(hex(SMALL_ORDER[0]!));
  assert.equal(didKeyIsWellFormed(weak), true);
  assert.equal(didKeyIsUsable(weak), false);
  const x = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
  assert.equal(didKeyIsUsable(didKeyFromPublicKey(new Uint8Array(Buffer.from(x, 'base64url')))), true);
  assert.equal(didKeyIsUsable('did:web:example.com'), true);
  assert.equal(didKeyIsUsable('did:key:zNOTAKEY'), false);
});
