// Key ids carried in the JWS header `kid`.
import { createHash } from 'node:crypto';
import { base64urlEncode } from './base64url.ts';

/**
 * RFC 7638 JWK thumbprint of an Ed25519 public key: SHA-256 over the canonical JWK
 * `{"crv":"Ed25519","kty":"OKP","x":...}`. Lets the service pick the right project key
 * after a rotation without trying each one.
 */
export function permitKeyId(publicKey: Uint8Array): string {
  const jwk = `{"crv":"Ed25519","kty":"OKP","x":"${base64urlEncode(publicKey)}"}`;
  return createHash('sha256').update(jwk, 'utf8').digest('base64url');
}

/** Root permits are issued by the project, named this way in `iss`. */
export function permitIssuerId(projectId: string): string {
  return `gavel:project:${projectId}`;
}

/** kid of a delegated link: the delegating DID, as a DID URL for did:key. */
export function delegatedKeyId(did: string): string {
  return did.startsWith('did:key:') ? `${did}#${did.slice('did:key:'.length)}` : did;
}
