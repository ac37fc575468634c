// DIDs: the generic syntax check (W3C DID Core §3.1) and the did:key Ed25519 method.
import { base58btcDecode, base58btcEncode } from './base58btc.ts';
import { isWeakEd25519Key } from './ed25519-order.ts';

/** Longest DID accepted anywhere in a permit; bounds regex work on hostile input. */
export const MAX_DID_LENGTH = 2048;

// did = "did:" method-name ":" method-specific-id
// method-name = 1*(%x61-7A / DIGIT); method-specific-id = *( *idchar ":" ) 1*idchar
// idchar = ALPHA / DIGIT / "." / "-" / "_" / pct-encoded
// A percent escape is accepted in its one spelling (RFC 3986 6.2.2.1-2): uppercase hex, and never
// for a character an idchar holds as is (a letter, a digit, ".", "-", "_"). DIDs are compared as
// strings everywhere (frozen state, permit subjects, policy rules, agent rows), so a second spelling
// of one DID would be a second agent: a freeze of `%3a8443` would not stop `%3A8443`.
const PCT_CANONICAL = '%(?:[0189A-F][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-F])';
// The one definition: the permit claims, the policy language and the HTTP schemas all use it.
export const DID_PATTERN = `^did:[a-z0-9]+:(?:[A-Za-z0-9._:-]|${PCT_CANONICAL})*(?:[A-Za-z0-9._-]|${PCT_CANONICAL})$`;
const DID_SYNTAX = new RegExp(DID_PATTERN);
// The same language for DIDs without a percent escape (most of them): markedly faster.
const DID_PLAIN = /^did:[a-z0-9]+:[A-Za-z0-9._:-]*[A-Za-z0-9._-]$/;

/** True when `s` is a DID of at most `maxLength` characters (not a DID URL: no path, query or fragment). */
export function isDid(s: unknown, maxLength = MAX_DID_LENGTH): s is string {
  if (typeof s !== 'string' || s.length > maxLength) return false;
  return s.indexOf('%') === -1 ? DID_PLAIN.test(s) : DID_SYNTAX.test(s);
}

// Multicodec varint for ed25519-pub (0xed) is the two bytes 0xed 0x01.
const ED25519_PUB_PREFIX = [0xed, 0x01] as const;

/** `did:key:z6Mk...` for a raw 32-byte Ed25519 public key. */
export function didKeyFromPublicKey(raw32: Uint8Array): string {
  if (!(raw32 instanceof Uint8Array) || raw32.length !== 32) {
    throw new TypeError('an Ed25519 public key is 32 bytes');
  }
  const bytes = new Uint8Array(34);
  bytes.set(ED25519_PUB_PREFIX, 0);
  bytes.set(raw32, 2);
  return `did:key:z${base58btcEncode(bytes)}`;
}

/** The raw Ed25519 public key named by a did:key DID, or null if it is not one. */
export function publicKeyFromDidKey(did: string): Uint8Array | null {
  if (typeof did !== 'string' || !did.startsWith('did:key:z') || did.length > 100) return null;
  const bytes = base58btcDecode(did.slice('did:key:z'.length));
  if (bytes === null || bytes.length !== 34) return null;
  if (bytes[0] !== ED25519_PUB_PREFIX[0] || bytes[1] !== ED25519_PUB_PREFIX[1]) return null;
  return bytes.slice(2);
}

/**
 * False for a `did:key` that does not name an Ed25519 key (a typo, another key type): such an
 * agent could never sign a delegation, so nothing is issued to it. Other methods pass (did:web is
 * resolved, if ever, where a key is needed).
 */
export function didKeyIsWellFormed(did: string): boolean {
  return !did.startsWith('did:key:') || publicKeyFromDidKey(did) !== null;
}

/**
 * Where an agent is registered or a permit issued: a well-formed did:key that also names a usable
 * key, not a point of small order whose "holder" holds no secret (ed25519-order.ts). Not on the
 * decision's path: the check costs about half a millisecond.
 */
export function didKeyIsUsable(did: string): boolean {
  if (!did.startsWith('did:key:')) return true;
  const raw = publicKeyFromDidKey(did);
  return raw !== null && !isWeakEd25519Key(raw);
}
