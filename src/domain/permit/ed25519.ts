// Ed25519 verification through node:crypto (no hand-rolled primitives).
import { createPublicKey, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { base64urlEncode } from './base64url.ts';

export function ed25519PublicKey(raw32: Uint8Array): KeyObject | null {
  if (!(raw32 instanceof Uint8Array) || raw32.length !== 32) return null;
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: base64urlEncode(raw32) }, format: 'jwk' });
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
