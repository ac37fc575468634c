// Parses an approval key as registered: raw 32 bytes in base64url, or an Ed25519 public JWK
// (RFC 8037: kty OKP, crv Ed25519, x). Private JWKs are refused so a key's secret half is never
// sent to the service by mistake and stored. So is a JWK whose own alg, use or key_ops say it is
// not an EdDSA verification key (RFC 7517 §4.2-4.4): its holder meant it for something else.
import { base64urlDecode } from '../permit/base64url.ts';
import { ed25519PublicKey } from '../permit/ed25519.ts';
import { isWeakEd25519Key } from '../permit/ed25519-order.ts';

export type ParsedKey = { ok: true; raw: Uint8Array } | { ok: false; code: string; detail: string };

export function parseApprovalPublicKey(input: unknown): ParsedKey {
  let x: unknown = input;
  if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
    const jwk = input as Record<string, unknown>;
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519') return { ok: false, code: 'key_type', detail: 'a JWK approval key must have kty "OKP" and crv "Ed25519"' };
    if ('d' in jwk) return { ok: false, code: 'private_key', detail: 'this JWK carries a private key (d); send only the public key' };
    // "EdDSA" (RFC 8037) or the fully specified "Ed25519" (RFC 9864).
    if ('alg' in jwk && jwk.alg !== 'EdDSA' && jwk.alg !== 'Ed25519') return { ok: false, code: 'key_type', detail: 'this JWK names an alg other than "EdDSA" or "Ed25519"' };
    if (('use' in jwk && jwk.use !== 'sig') || ('key_ops' in jwk && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify')))) {
      return { ok: false, code: 'key_use', detail: 'this JWK is declared for another use: an approval key verifies signatures (use "sig", key_ops with "verify")' };
    }
    x = jwk.x;
  }
  if (typeof x !== 'string') return { ok: false, code: 'malformed_key', detail: 'the public key must be base64url of 32 raw bytes, or an Ed25519 JWK' };
  const raw = base64urlDecode(x);
  if (!raw || raw.length !== 32) return { ok: false, code: 'malformed_key', detail: 'the public key must be exactly 32 bytes, base64url without padding' };
  if (!ed25519PublicKey(raw)) return { ok: false, code: 'malformed_key', detail: 'the bytes are not an Ed25519 public key' };
  if (isWeakEd25519Key(raw)) return { ok: false, code: 'malformed_key', detail: 'the bytes are not a usable Ed25519 public key (not a canonical point, or one of small order): no signature could be checked against it' };
  return { ok: true, raw };
}
