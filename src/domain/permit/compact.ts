// One link as a compact JWS (RFC 7515 §7.1): BASE64URL(header).BASE64URL(payload).BASE64URL(sig).
// Decoding here is syntax and shape only; signatures are checked in verify-signatures.ts.
import { base64urlDecode, base64urlEncode } from './base64url.ts';
import { validateClaims } from './claims.ts';
import type { PermitClaims, PermitFailure, PermitHeader, SignFunction } from './types.ts';
import { PermitError, fail, shownName } from './types.ts';
import { MAX_PRESENTED_LENGTH } from './limits.ts';
import { memberNames, parseJsonExactly, repeatedMembers } from '../../lib/json-parse.ts';

export const PERMIT_TYP = 'gavel-permit+jwt';
const HEADER_KEYS = new Set(['alg', 'typ', 'kid']);
const utf8 = new TextDecoder('utf-8', { fatal: true });
const ascii = new TextEncoder();

export interface DecodedLink {
  header: PermitHeader;
  claims: PermitClaims;
  signingInput: Uint8Array;
  signature: Uint8Array;
}

function decodeJson(segment: string): { ok: true; value: unknown; rounded: boolean } | { ok: false; repeated?: string } {
  const bytes = base64urlDecode(segment);
  if (bytes === null) return { ok: false };
  try {
    const text = utf8.decode(bytes);
    const value: unknown = parseJsonExactly(text);
    // I-JSON (RFC 7493): a member named twice is read differently by different parsers (the first
    // value or the last), and a permit is handed to other parties: refused, as request bodies are.
    const [twice] = repeatedMembers(text);
    return twice ? { ok: false, repeated: twice.pointer } : { ok: true, value, rounded: memberNames(text).rounded };
  } catch {
    return { ok: false };
  }
}

const PERMIT_MEDIA_TYPE = `application/${PERMIT_TYP}`;

/**
 * RFC 7515 §4.1.9: a typ without '/' stands for "application/" + typ, and media type names are
 * case-insensitive (RFC 2045), so `application/gavel-permit+jwt` and `Gavel-Permit+JWT` name the
 * same type a delegator's JOSE library may have written. Parameters are not part of it: refused.
 */
function namesPermitType(typ: unknown): boolean {
  if (typeof typ !== 'string' || typ.length > PERMIT_MEDIA_TYPE.length) return false;
  const lower = typ.toLowerCase();
  return (lower.includes('/') ? lower : `application/${lower}`) === PERMIT_MEDIA_TYPE;
}

function describe(v: unknown): string {
  // JSON.stringify escapes controls and lone surrogates; the cut is by code point, so it never
  // leaves half of a surrogate pair (which no decision event could hold).
  const s = typeof v === 'string' ? JSON.stringify(v) : typeof v;
  const points = Array.from(s);
  return points.length > 40 ? `${points.slice(0, 40).join('')}…` : s;
}

/** Decodes and shape-checks one compact JWS; `link` is its index for error reporting. */
export function decodeLink(jws: string, link: number): { ok: true; value: DecodedLink } | PermitFailure {
  const parts = jws.split('.');
  if (parts.length !== 3) return fail('malformed', 'a permit link must be a compact JWS of three dot-separated parts', { link });
  const [h, p, s] = parts as [string, string, string];
  const header = decodeJson(h);
  if (!header.ok && header.repeated !== undefined) return fail('malformed', `the protected header names a member twice (${shownName(header.repeated)})`, { link });
  if (!header.ok || typeof header.value !== 'object' || header.value === null || Array.isArray(header.value)) {
    return fail('malformed', 'the protected header is not base64url-encoded JSON object', { link });
  }
  const hv = header.value as Record<string, unknown>;
  // alg first: `none` and HMAC (key-confusion) headers are refused by name before anything else.
  // "Ed25519" is RFC 9864's fully specified name for the same algorithm (decision 0300 addendum).
  if (hv.alg !== 'EdDSA' && hv.alg !== 'Ed25519') return fail('algorithm', `alg ${describe(hv.alg)} is refused; permits are signed with EdDSA (Ed25519)`, { link });
  for (const k of Object.keys(hv)) if (!HEADER_KEYS.has(k)) return fail('header', `unsupported header parameter ${describe(k)}`, { link });
  if (!namesPermitType(hv.typ)) return fail('header', `typ must be ${PERMIT_TYP}`, { link });
  if (typeof hv.kid !== 'string' || hv.kid.length === 0 || hv.kid.length > 2200) return fail('header', 'kid must be a non-empty string', { link });
  const payload = decodeJson(p);
  if (!payload.ok && payload.repeated !== undefined) return fail('malformed', `the payload names a member twice (${shownName(payload.repeated)})`, { link });
  if (!payload.ok) return fail('malformed', 'the payload is not base64url-encoded JSON', { link });
  // A limit signed as 4999.99999999999999 reads as 5000: enforced, it would admit more than was
  // signed. Every number a permit holds is an integer (money, uses, times), so it must read exactly.
  if (payload.rounded) return fail('claims', 'the payload holds a number written as a non-integer that reads as an integer (4999.99999999999999 as 5000); limits, counts and times are integers, written exactly', { link });
  const claims = validateClaims(payload.value);
  if (!claims.ok) return { ...claims, link };
  const signature = base64urlDecode(s);
  if (signature === null) return fail('malformed', 'the signature is not base64url', { link });
  if (signature.length !== 64) return fail('signature', 'an Ed25519 signature is 64 bytes', { link });
  return {
    ok: true,
    value: {
      header: { alg: 'EdDSA', typ: PERMIT_TYP, kid: hv.kid },
      claims: claims.value,
      signingInput: ascii.encode(`${h}.${p}`),
      signature,
    },
  };
}

/** Characters of an Ed25519 signature in base64url (64 bytes, unpadded). */
const SIGNATURE_CHARS = 86;

/**
 * Validates claims, then signs them as one compact JWS. Throws PermitError on bad claims, and
 * (`too_large`, before signing) for a link longer than any presented permit may be: verification
 * would refuse it on every use.
 */
export async function signPermitClaims(claims: PermitClaims, kid: string, sign: SignFunction): Promise<string> {
  const checked = validateClaims(claims);
  if (!checked.ok) throw new PermitError(checked.check, checked.detail);
  const header: PermitHeader = { alg: 'EdDSA', typ: PERMIT_TYP, kid };
  const h = base64urlEncode(ascii.encode(JSON.stringify(header)));
  const p = base64urlEncode(ascii.encode(JSON.stringify(checked.value)));
  const length = h.length + p.length + 2 + SIGNATURE_CHARS;
  if (length > MAX_PRESENTED_LENGTH) {
    throw new PermitError('too_large', `the permit would be ${length} characters; a presented permit may have at most ${MAX_PRESENTED_LENGTH}`);
  }
  const signature = await sign(ascii.encode(`${h}.${p}`));
  if (!(signature instanceof Uint8Array) || signature.length !== 64) {
    throw new PermitError('signature', 'the signer did not return a 64-byte Ed25519 signature');
  }
  return `${h}.${p}.${base64urlEncode(signature)}`;
}
