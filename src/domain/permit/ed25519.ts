// Ed25519 verification through node:crypto (no hand-rolled primitives).
import { createPublicKey, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { base64urlEncode } from './base64url.ts';

// Importing a key costs about a third of a verification, and the same few keys (the project's,
// its agents') recur; memoised by key *value* (never by array identity, which a caller may reuse).
const MAX_CACHED_KEYS = 1024;
const keyCache = new Map<string, KeyObject>();

export function ed25519PublicKey(raw32: Uint8Array): KeyObject | null {
  if (!(raw32 instanceof Uint8Array) || raw32.length !== 32) return null;
  const x = base64urlEncode(raw32);
  const cached = keyCache.get(x);
  if (cached !== undefined) return cached;
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
    if (keyCache.size >= MAX_CACHED_KEYS) keyCache.clear();
    keyCache.set(x, key);
    return key;
  } catch {
    return null;
  }
}

/** True only for a valid signature; any error (bad point, wrong length) is a plain false. */
export function ed25519Verify(key: KeyObject, message: Uint8Array, signature: Uint8Array): boolean {
  try {
    return verify(null, message, key, signature);
  } catch {
    return false;
  }
}
