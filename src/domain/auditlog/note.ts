// C2SP signed-note (https://c2sp.org/signed-note): text, a blank line, then signature lines
// "— <name> base64(keyID[4] || signature)". Key IDs are SHA-256(name || "\n" || type || key)[:4].
// Verifier keys ("vkeys") are "<name>+<hex key ID>+base64(type || key)".
import { createHash, createPublicKey, verify as cryptoVerify } from 'node:crypto';
import { AuditLogError } from './errors.ts';
import { bytesEqual, concat, fromBase64, fromHex, toBase64, toHex, utf8 } from './bytes.ts';

/** Signature type bytes assigned by signed-note. */
export const SIG_TYPE_ED25519 = 0x01;
export const SIG_TYPE_COSIGNATURE_V1 = 0x04;

const EM_DASH = '\u2014';
/** Verifiers must accept at least 16; a bound keeps hostile notes cheap to reject. */
export const MAX_NOTE_SIGNATURES = 64;

export interface VerifierKey {
  readonly name: string;
  readonly type: number;
  readonly keyId: Uint8Array; // 4 bytes
  readonly publicKey: Uint8Array; // 32-byte Ed25519 key for types 0x01 and 0x04
}

export interface NoteSignature {
  readonly name: string;
  readonly keyId: Uint8Array;
  /** The signature bytes after the key ID (for cosignature/v1: timestamp || signature). */
  readonly signature: Uint8Array;
}

export interface Note {
  /** Note text including its final newline. */
  readonly text: string;
  readonly signatures: readonly NoteSignature[];
}

/** Signs the given bytes with the key a NoteSigner names; e.g. a Signer port bound to one key. */
export type SignFn = (message: Uint8Array) => Promise<Uint8Array>;

export interface NoteSigner {
  readonly name: string;
  readonly keyId: Uint8Array;
  sign: SignFn;
}

// "Unicode spaces" are the White_Space property (Go's unicode.IsSpace): JavaScript's \s lacks U+0085
// and counts U+FEFF, which is not one.
export function checkKeyName(name: string): void {
  if (typeof name !== 'string' || name.length === 0 || /[\p{White_Space}+\u0000-\u001f]/u.test(name)) {
    throw new AuditLogError('malformed_note', 'key name must be non-empty, without spaces, plus or control characters');
  }
}

export function keyId(name: string, type: number, publicKey: Uint8Array): Uint8Array {
  checkKeyName(name);
  const h = createHash('sha256').update(utf8.encode(`${name}\n`)).update(new Uint8Array([type])).update(publicKey).digest();
  return new Uint8Array(h.subarray(0, 4));
}

export function formatVkey(name: string, type: number, publicKey: Uint8Array): string {
  return `${name}+${toHex(keyId(name, type, publicKey))}+${toBase64(concat(new Uint8Array([type]), publicKey))}`;
}

/** Parses a vkey of type 0x01 (Ed25519) or 0x04 (cosignature/v1), checking its key ID. */
export function parseVkey(vkey: string): VerifierKey {
  if (typeof vkey !== 'string') throw new AuditLogError('malformed_note', 'vkey must be a string');
  // The name has no '+', the hash is 8 hex digits; the base64 part may itself contain '+'.
  const m = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(vkey);
  if (!m) throw new AuditLogError('malformed_note', 'vkey must be name+hexid+base64');
  const name = m[1] as string;
  checkKeyName(name);
  const material = fromBase64(m[3] as string);
  const type = material[0];
  if ((type !== SIG_TYPE_ED25519 && type !== SIG_TYPE_COSIGNATURE_V1) || material.length !== 33) {
    throw new AuditLogError('malformed_note', 'vkey is not an Ed25519 (0x01) or cosignature/v1 (0x04) key');
  }
  const publicKey = material.subarray(1);
  const id = keyId(name, type, publicKey);
  if (!bytesEqual(id, fromHex(m[2] as string))) throw new AuditLogError('malformed_note', 'vkey key ID does not match its key');
  return { name, type, keyId: id, publicKey };
}

export function formatSignatureLine(name: string, id: Uint8Array, signature: Uint8Array): string {
  checkKeyName(name);
  return `${EM_DASH} ${name} ${toBase64(concat(id, signature))}\n`;
}

function parseSignatureLine(line: string): NoteSignature {
  const m = /^\u2014 ([^ ]+) ([A-Za-z0-9+/=]+)$/.exec(line);
  if (!m) throw new AuditLogError('malformed_note', 'malformed signature line');
  const name = m[1] as string;
  checkKeyName(name);
  const blob = fromBase64(m[2] as string);
  if (blob.length < 5) throw new AuditLogError('malformed_note', 'signature too short');
  return { name, keyId: blob.subarray(0, 4), signature: blob.subarray(4) };
}

export function parseNote(note: string): Note {
  if (typeof note !== 'string') throw new AuditLogError('malformed_note', 'note must be a string');
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) throw new AuditLogError('malformed_note', 'control character in note');
  const sep = note.lastIndexOf('\n\n');
  if (sep < 0 || !note.endsWith('\n')) throw new AuditLogError('malformed_note', 'note has no signature block');
  const text = note.slice(0, sep + 1);
  const lines = note.slice(sep + 2, -1).split('\n');
  if (lines.length > MAX_NOTE_SIGNATURES) throw new AuditLogError('malformed_note', 'too many signatures');
  return { text, signatures: lines.map(parseSignatureLine) };
}

/** A note signer for an Ed25519 key (type 0x01), e.g. the log's checkpoint key. */
export function ed25519NoteSigner(name: string, publicKey: Uint8Array, sign: SignFn): NoteSigner {
  return { name, keyId: keyId(name, SIG_TYPE_ED25519, publicKey), sign };
}

/** Signs `text` (which must end in a newline) with each signer, in order. */
export async function signNote(text: string, signers: readonly NoteSigner[]): Promise<string> {
  if (!text.endsWith('\n')) throw new AuditLogError('malformed_note', 'note text must end with a newline');
  let lines = '';
  for (const s of signers) lines += formatSignatureLine(s.name, s.keyId, await s.sign(utf8.encode(text)));
  return `${text}\n${lines}`;
}

/** Ed25519 (RFC 8032) verification; false on any malformed input. */
export function verifyEd25519(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  try {
    const key = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey).toString('base64url') },
      format: 'jwk',
    });
    return cryptoVerify(null, message, key, signature);
  } catch {
    return false;
  }
}

/** The known key a signature line claims to be from: name and key ID must both match. */
export function findKey(sig: NoteSignature, keys: readonly VerifierKey[]): VerifierKey | undefined {
  return keys.find((k) => k.name === sig.name && bytesEqual(k.keyId, sig.keyId));
}

/**
 * Opens a note signed with Ed25519 (type 0x01) keys. Signatures from unknown keys are ignored;
 * a known key's signature that fails rejects the whole note; at least one must verify.
 */
export function openNote(note: string, keys: readonly VerifierKey[]): { note: Note; verifiedBy: VerifierKey[] } {
  const parsed = parseNote(note);
  const message = utf8.encode(parsed.text);
  const verifiedBy: VerifierKey[] = [];
  for (const sig of parsed.signatures) {
    const key = findKey(sig, keys.filter((k) => k.type === SIG_TYPE_ED25519));
    if (!key) continue;
    if (!verifyEd25519(key.publicKey, message, sig.signature)) {
      throw new AuditLogError('unverified_note', `signature from ${key.name} does not verify`);
    }
    if (!verifiedBy.includes(key)) verifiedBy.push(key);
  }
  if (verifiedBy.length === 0) {
    // Which keys signed it and which were given (names and key IDs are public), so that a wrong key is told from a forged note.
    const named = (k: { name: string; keyId: Uint8Array }) => `${k.name} (key ID ${toHex(k.keyId)})`;
    throw new AuditLogError('unverified_note', `no signature from a known key: signed by ${parsed.signatures.map(named).join(', ')}; `
      + `the key${keys.length === 1 ? '' : 's'} given: ${keys.map(named).join(', ') || 'none'}`);
  }
  return { note: parsed, verifiedBy };
}
