import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { base58btcDecode, base58btcEncode } from '../../../src/domain/permit/base58btc.ts';
import { didKeyFromPublicKey, isDid, publicKeyFromDidKey } from '../../../src/domain/permit/did.ts';

const bytes = (s: string) => new TextEncoder().encode(s);

test('base58btc matches the draft-msporny-base58 vectors', () => {
  assert.equal(base58btcEncode(bytes('Hello World!')), '2NEpo7TZRRrLZSi2U');
  assert.equal(
    base58btcEncode(bytes('The quick brown fox jumps over the lazy dog.')),
    'USm3fpXnKG5EUBx2ndxBDMPVciP5hGey2Jh4NDv6gmeo1LkMeiKrLJUUBk6Z',
  );
  assert.equal(base58btcEncode(Uint8Array.from([0x00, 0x00, 0x28, 0x7f, 0xb4, 0xcd])), '11233QC4');
  assert.deepEqual(base58btcDecode('11233QC4'), Uint8Array.from([0x00, 0x00, 0x28, 0x7f, 0xb4, 0xcd]));
  assert.equal(base58btcEncode(new Uint8Array(0)), '');
  assert.deepEqual(base58btcDecode(''), new Uint8Array(0));
});

test('base58btc refuses characters outside the alphabet (0, O, I, l, +)', () => {
  for (const bad of ['0', 'O', 'I', 'l', '+', 'abc!', ' 2N']) assert.equal(base58btcDecode(bad), null, bad);
});

test('base58btc round-trips arbitrary bytes, leading zeros included', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (b) => {
      assert.deepEqual(base58btcDecode(base58btcEncode(b)), b);
    }),
  );
});

test('did:key spec example decodes to its published JWK x', () => {
  const key = publicKeyFromDidKey('did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK');
  assert.ok(key);
  assert.equal(Buffer.from(key).toString('base64url'), 'Lm_M42cB3HkUiODQsXRcweM6TByfzEHGO9ND274JcOY');
  assert.equal(didKeyFromPublicKey(key), 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK');
});

test('did:key vectors agree with their publicKeyBase58 (ACA-Py / did-method-key test fixtures)', () => {
  const vectors: Array<[string, string]> = [
    ['did:key:z6Mkgg342Ycpuk263R9d8Aq6MUaxPn1DDeHyGo38EefXmgDL', '3Dn1SJNPaCXcvvJvSbsFWP2xaCjMom3can8CQNhWrTRx'],
    ['did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th', '8HH5gYEeNc3z7PYXmd54d4x6qAfCNrqQqEB3nS7Zfu7K'],
    ['did:key:z6MkvePyWAApUVeDboZhNbckaWHnqtD6pCETd6xoqGbcpEBV', 'HC8vuuvP8x9kVJizh2eujQjo2JwFQJz6w63szzdbu1Q7'],
  ];
  for (const [did, b58] of vectors) {
    const raw = base58btcDecode(b58);
    assert.ok(raw);
    assert.deepEqual(publicKeyFromDidKey(did), raw);
    assert.equal(didKeyFromPublicKey(raw), did);
  }
});

test('publicKeyFromDidKey refuses non-Ed25519 and malformed did:key values', () => {
  for (const bad of [
    'did:key:z6LShLeXRTzevtwcfehaGEzCMyL3bNsAeKCwcqwJxyCo63yE', // X25519 (0xec)
    'did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme', // secp256k1
    'did:key:6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', // no multibase prefix
    'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2do', // truncated
    'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK0', // bad char
    'did:web:example.com',
    '',
    // The Ed25519 multicodec prefix followed by 33 bytes instead of 32.
    `did:key:z${base58btcEncode(new Uint8Array([0xed, 0x01, ...new Uint8Array(33).fill(7)]))}`,
  ]) {
    assert.equal(publicKeyFromDidKey(bad), null, bad);
  }
});

test('didKeyFromPublicKey refuses keys that are not 32 bytes', () => {
  assert.throws(() => didKeyFromPublicKey(new Uint8Array(31)), TypeError);
});

test('isDid follows the W3C DID Core syntax', () => {
  for (const ok of [
    'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
    'did:web:example.com',
    'did:web:example.com:user:alice',
    'did:example:123%20456',
    'did:ion:EiAnKD8-jfdd0MDcZUjAbRgaThBrMxPTFOxcnfJhI7Ukaw',
  ]) {
    assert.equal(isDid(ok), true, ok);
  }
  for (const bad of [
    'did:KEY:abc', // method names are lowercase
    'did:key:', // empty method-specific id
    'did::abc',
    'did:web:example.com:', // ends with ':'
    'did:web:example.com/path', // a DID URL, not a DID
    'did:web:example.com#frag',
    'did:web:example.com?q=1',
    'did:example:100%', // bad pct-encoding
    'DID:key:abc',
    'urn:uuid:1234',
    `did:key:${'a'.repeat(3000)}`,
    42,
    null,
  ]) {
    assert.equal(isDid(bad), false, String(bad));
  }
});
