// An agent delegating an attenuated permit to another agent. Runs on the agent's side (or in
// tests); verification re-checks everything, so this only fails early and builds the chain.
import { checkAttenuation } from './attenuation.ts';
import { permitCommitment } from './commitment.ts';
import { validateClaims } from './claims.ts';
import { decodeLink, signPermitClaims } from './compact.ts';
import { base64urlDecode } from './base64url.ts';
import { publicKeyFromDidKey } from './did.ts';
import { ed25519PublicKey, ed25519Verify } from './ed25519.ts';
import { delegatedKeyId } from './key-id.ts';
import { CHAIN_SEPARATOR, MAX_CHAIN_LINKS, MAX_PRESENTED_LENGTH } from './limits.ts';
import type { GavelConstraints, PermitClaims, SignFunction } from './types.ts';
import { PermitError } from './types.ts';

const ascii = new TextEncoder();

/**
 * A did:key issuer's key is known here: a link its key did not sign (a mixed-up key file) would be
 * refused by every decision (signature), so it is refused now. Other methods need a resolver.
 */
function checkSignedByIssuer(jws: string, iss: string): void {
  const raw = publicKeyFromDidKey(iss);
  const key = raw && ed25519PublicKey(raw);
  if (!key) return;
  const dot = jws.lastIndexOf('.');
  const signature = base64urlDecode(jws.slice(dot + 1));
  if (!signature || !ed25519Verify(key, ascii.encode(jws.slice(0, dot)), signature)) {
    throw new PermitError('signature', `the link is not signed by the key of ${iss}, the parent's subject: a decision would refuse it`);
  }
}

export interface DelegationInput {
  /** DID of the agent receiving the delegated permit. */
  sub: string;
  jti: string;
  /** Unix seconds. */
  iat: number;
  /** Defaults to the later of `iat` and the parent's nbf. */
  nbf?: number;
  /** Defaults to the parent's exp. */
  exp?: number;
  gavel: Omit<GavelConstraints, 'parent'>;
}

/**
 * Appends a link signed by the parent leaf's subject (whose private key `signWithAgentKey`
 * holds) and returns the new presentation `root~...~parent~child`. Throws PermitError when the
 * child would be wider than its parent, the chain would exceed its bounds, or (for a did:key
 * subject) the function signed with another key.
 */
export async function delegatePermit(parentChain: string, child: DelegationInput, signWithAgentKey: SignFunction): Promise<string> {
  if (typeof parentChain !== 'string' || parentChain.length === 0) throw new PermitError('malformed', 'the parent permit must be a non-empty string');
  const jwss = parentChain.split(CHAIN_SEPARATOR);
  if (jwss.length + 1 > MAX_CHAIN_LINKS) throw new PermitError('chain_too_long', `a chain may have at most ${MAX_CHAIN_LINKS} links`);
  const parentJws = jwss[jwss.length - 1] as string;
  const parent = decodeLink(parentJws, jwss.length - 1);
  if (!parent.ok) throw new PermitError(parent.check, parent.detail);
  const p = parent.value.claims;
  const claims: PermitClaims = {
    iss: p.sub,
    sub: child.sub,
    aud: p.aud,
    jti: child.jti,
    iat: child.iat,
    nbf: child.nbf ?? Math.max(child.iat, p.nbf),
    exp: child.exp ?? p.exp,
    gavel: { ...child.gavel, parent: permitCommitment(parentJws) },
  };
  // The link's own shape first, as verification checks it (claims before attenuation): a link with
  // limits in two currencies is refused as claims, whatever its parent limits.
  const checked = validateClaims(claims);
  if (!checked.ok) throw new PermitError(checked.check, checked.detail);
  const widened = checkAttenuation(p, checked.value, jwss.length);
  if (widened !== null) throw new PermitError(widened.check, widened.detail);
  const jws = await signPermitClaims(claims, delegatedKeyId(p.sub), signWithAgentKey);
  checkSignedByIssuer(jws, p.sub);
  const chain = `${parentChain}${CHAIN_SEPARATOR}${jws}`;
  if (chain.length > MAX_PRESENTED_LENGTH) throw new PermitError('too_large', `the chain would exceed ${MAX_PRESENTED_LENGTH} characters`);
  return chain;
}
