// An agent delegating an attenuated permit to another agent. Runs on the agent's side (or in
// tests); verification re-checks everything, so this only fails early and builds the chain.
import { checkAttenuation } from './attenuation.ts';
import { permitCommitment } from './commitment.ts';
import { decodeLink, signPermitClaims } from './compact.ts';
import { delegatedKeyId } from './key-id.ts';
import { CHAIN_SEPARATOR, MAX_CHAIN_LINKS, MAX_PRESENTED_LENGTH } from './limits.ts';
import type { GavelConstraints, PermitClaims, SignFunction } from './types.ts';
import { PermitError } from './types.ts';

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
 * child would be wider than its parent or the chain would exceed its bounds.
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
  const widened = checkAttenuation(p, claims, jwss.length);
  if (widened !== null) throw new PermitError(widened.check, widened.detail);
  const jws = await signPermitClaims(claims, delegatedKeyId(p.sub), signWithAgentKey);
  const chain = `${parentChain}${CHAIN_SEPARATOR}${jws}`;
  if (chain.length > MAX_PRESENTED_LENGTH) throw new PermitError('too_large', `the chain would exceed ${MAX_PRESENTED_LENGTH} characters`);
  return chain;
}
