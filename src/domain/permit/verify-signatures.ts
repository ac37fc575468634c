// The time-independent half of verification: parse the presented chain, check every link's
// shape, linkage and attenuation, then every signature. Its result depends only on the
// presented string, the project (id and key) and the DID resolver, so a caller may cache a
// success by leaf commitment (which transitively commits to every ancestor through
// `gavel.parent`); time is checked separately by checkPermitTime on every use.
import { permitCommitment } from './commitment.ts';
import { checkAttenuation } from './attenuation.ts';
import { decodeLink } from './compact.ts';
import type { DecodedLink } from './compact.ts';
import { publicKeyFromDidKey } from './did.ts';
import { ed25519PublicKey, ed25519Verify } from './ed25519.ts';
import { permitIssuerId, permitKeyId } from './key-id.ts';
import { CHAIN_SEPARATOR, MAX_CHAIN_LINKS, MAX_PRESENTED_LENGTH } from './limits.ts';
import type { DidResolver, VerifiedPermit, VerifyResult } from './types.ts';
import { fail } from './types.ts';

export interface SignatureContext {
  projectId: string;
  /** Raw 32-byte Ed25519 public key of the project's permit key. */
  projectPublicKey: Uint8Array;
  /** Resolves DIDs other than did:key (did:key is always resolved locally). */
  resolveDid?: DidResolver;
}

async function resolveKey(did: string, resolveDid: DidResolver | undefined): Promise<Uint8Array | null> {
  if (did.startsWith('did:key:')) return publicKeyFromDidKey(did);
  if (resolveDid === undefined) return null;
  try {
    const key = await resolveDid(did);
    return key instanceof Uint8Array && key.length === 32 ? key : null;
  } catch {
    return null;
  }
}

/** Checks everything about a presented permit chain except time and the acting agent. */
export async function verifyPermitSignatures(presented: unknown, ctx: SignatureContext): Promise<VerifyResult> {
  if (typeof presented !== 'string' || presented.length === 0) return fail('malformed', 'the permit must be a non-empty string');
  if (presented.length > MAX_PRESENTED_LENGTH) {
    return fail('too_large', `the permit is longer than ${MAX_PRESENTED_LENGTH} characters`);
  }
  const jwss = presented.split(CHAIN_SEPARATOR);
  if (jwss.length > MAX_CHAIN_LINKS) {
    return fail('chain_too_long', `the chain has ${jwss.length} links; at most ${MAX_CHAIN_LINKS} are accepted`);
  }
  const projectKey = ed25519PublicKey(ctx.projectPublicKey);
  if (projectKey === null) return fail('verification_error', 'the project permit key is not a 32-byte Ed25519 public key');

  // 1. Syntax and claim shapes of every link (cheap, no crypto).
  const links: DecodedLink[] = [];
  for (const [i, jws] of jwss.entries()) {
    const decoded = decodeLink(jws, i);
    if (!decoded.ok) return decoded;
    links.push(decoded.value);
  }
  const commitments = jwss.map(permitCommitment);

  // 2. Linkage and attenuation (still no crypto).
  const root = links[0] as DecodedLink;
  for (const [i, link] of links.entries()) {
    const c = link.claims;
    if (c.aud !== ctx.projectId) return fail('audience', `link ${i} is for another project`, { link: i });
    if (i === 0) {
      if (c.iss !== permitIssuerId(ctx.projectId)) return fail('issuer', 'the root permit is not issued by this project', { link: 0 });
      if (c.gavel.parent !== undefined) return fail('chain_broken', 'the first link names a parent that was not presented', { link: 0 });
      if (link.header.kid !== permitKeyId(ctx.projectPublicKey)) {
        return fail('signature', "the root permit names a key other than this project's permit key", { link: 0 });
      }
      continue;
    }
    const parent = links[i - 1] as DecodedLink;
    if (c.iss !== parent.claims.sub) return fail('issuer', `link ${i} is not issued by the subject of its parent`, { link: i });
    if (c.gavel.parent !== commitments[i - 1]) return fail('chain_broken', `link ${i} does not name the link before it as its parent`, { link: i });
    if (link.header.kid !== c.iss && !link.header.kid.startsWith(`${c.iss}#`)) {
      return fail('header', `link ${i} names a key that does not belong to its issuer`, { link: i });
    }
    const widened = checkAttenuation(parent.claims, c, i);
    if (widened !== null) return widened;
  }

  // 3. Signatures: the root under the project key, each child under its parent's subject DID.
  if (!ed25519Verify(projectKey, root.signingInput, root.signature)) {
    return fail('signature', 'the root permit signature does not verify under the project permit key', { link: 0 });
  }
  for (let i = 1; i < links.length; i++) {
    const link = links[i] as DecodedLink;
    const raw = await resolveKey(link.claims.iss, ctx.resolveDid);
    const key = raw === null ? null : ed25519PublicKey(raw);
    if (key === null) return fail('did_unresolvable', `the key of the DID that signed link ${i} could not be resolved`, { link: i });
    if (!ed25519Verify(key, link.signingInput, link.signature)) {
      return fail('signature', `the signature of link ${i} does not verify under its issuer's key`, { link: i });
    }
  }

  const leaf = links[links.length - 1] as DecodedLink;
  const permit: VerifiedPermit = {
    commitment: commitments[commitments.length - 1] as string,
    chain: commitments,
    delegation_depth: links.length - 1,
    agent: leaf.claims.sub,
    project_id: ctx.projectId,
    claims: leaf.claims,
    links: links.map((l, i) => ({ commitment: commitments[i] as string, claims: l.claims })),
    not_before: Math.max(...links.map((l) => l.claims.nbf)),
    expires_at: Math.min(...links.map((l) => l.claims.exp)),
  };
  return { ok: true, permit };
}
