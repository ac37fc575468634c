// An auditor's verifier of the audit log's wire formats, written from the public standards alone
// and sharing no code with src/ (only node:crypto), so that a mistake in the log's own code cannot
// also hide in the check:
// - RFC 9162 §2.1.1 (MTH), §2.1.3 (PATH and its verification), §2.1.4 (PROOF/SUBPROOF and its
//   verification), with RFC 6962's 0x00 leaf and 0x01 node prefixes;
// - C2SP signed-note (note text, signature lines, key IDs, Ed25519 signatures, vkeys);
// - C2SP tlog-checkpoint (origin, size, root, extension lines);
// - C2SP tlog-cosignature (Ed25519 cosignature/v1: key ID type 0x04, timestamped_signature);
// - RFC 8785 (JCS) for the leaf bytes of decision 0600 (the event record with `leaf_version`).
// Every function throws a VerifierError naming the rule broken, rather than answering false, so a
// failing conformance test says which rule.
import { createHash, createPublicKey, verify } from 'node:crypto';

export class VerifierError extends Error {}
const fail = (rule: string): never => { throw new VerifierError(rule); };

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

// ---- RFC 9162 §2.1.1: the Merkle Tree Hash ----

/** MTH({d(0)}) = SHA-256(0x00 || d(0)) */
export const leafHash = (leaf: Uint8Array): Buffer => sha256(Uint8Array.of(0x00), leaf);
/** SHA-256(0x01 || left || right) */
export const nodeHash = (left: Uint8Array, right: Uint8Array): Buffer => sha256(Uint8Array.of(0x01), left, right);

/** The largest power of two smaller than n (n > 1). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[n]) over leaf hashes (already MTH of one leaf each). The empty tree: SHA-256(). */
export function mth(leaves: readonly Uint8Array[]): Buffer {
  if (leaves.length === 0) return sha256();
  if (leaves.length === 1) return Buffer.from(leaves[0]!);
  const k = splitPoint(leaves.length);
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

/** RFC 9162 §2.1.3.1: PATH(m, D[n]), the audit path of leaf m. */
export function path(m: number, leaves: readonly Uint8Array[]): Buffer[] {
  const n = leaves.length;
  if (n <= 1) return [];
  const k = splitPoint(n);
  return m < k
    ? [...path(m, leaves.slice(0, k)), mth(leaves.slice(k))]
    : [...path(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}

/** RFC 9162 §2.1.4.1: PROOF(m, D[n]) = SUBPROOF(m, D[n], true). */
export function consistencyProof(m: number, leaves: readonly Uint8Array[]): Buffer[] {
  return subproof(m, leaves, true);
}

function subproof(m: number, leaves: readonly Uint8Array[], b: boolean): Buffer[] {
  const n = leaves.length;
  if (m === n) return b ? [] : [mth(leaves)];
  const k = splitPoint(n);
  return m <= k
    ? [...subproof(m, leaves.slice(0, k), b), mth(leaves.slice(k))]
    : [...subproof(m - k, leaves.slice(k), false), mth(leaves.slice(0, k))];
}

// ---- RFC 9162 §2.1.3.2: verifying an inclusion proof ----

// Arithmetic, not bitwise: sizes go up to 2^53 - 1 and JavaScript's bitwise operators cut to 32 bits.
const lsb = (x: number): boolean => x % 2 === 1;
const shift = (x: number): number => Math.floor(x / 2);
function isPowerOfTwo(x: number): boolean {
  while (x > 1 && x % 2 === 0) x /= 2;
  return x === 1;
}

export function verifyInclusion(leafIndex: number, treeSize: number, hash: Uint8Array, inclusionPath: readonly Uint8Array[], rootHash: Uint8Array): void {
  // 1. leaf_index >= tree_size fails.
  if (!(Number.isSafeInteger(leafIndex) && Number.isSafeInteger(treeSize) && leafIndex >= 0 && leafIndex < treeSize)) fail('inclusion: leaf_index must be below tree_size');
  // 2. fn = leaf_index, sn = tree_size - 1; 3. r = hash.
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r: Uint8Array = hash;
  // 4. For each p in inclusion_path:
  for (const p of inclusionPath) {
    if (sn === 0) fail('inclusion: the path is longer than the tree is deep'); // a.
    if (lsb(fn) || fn === sn) { // b.
      r = nodeHash(p, r); // i.
      if (!lsb(fn)) while (!(lsb(fn) || fn === 0)) { fn = shift(fn); sn = shift(sn); } // ii.
    } else {
      r = nodeHash(r, p);
    }
    fn = shift(fn); sn = shift(sn); // c.
  }
  // 5. sn must be 0 and r the root.
  if (sn !== 0) fail('inclusion: the path is shorter than the tree is deep');
  if (!Buffer.from(r).equals(rootHash)) fail('inclusion: the path does not lead to the root');
}

// ---- RFC 9162 §2.1.4.2: verifying a consistency proof ----

/**
 * The RFC defines proofs for 0 < first < second; the two trivial cases the wire still carries are
 * taken as the tlog tooling does: an equal size needs an empty proof and the same root; size 0 (the
 * empty tree, a prefix of every tree) needs an empty proof.
 */
export function verifyConsistency(first: number, second: number, firstHash: Uint8Array, secondHash: Uint8Array, consistencyPath: readonly Uint8Array[]): void {
  if (!(Number.isSafeInteger(first) && Number.isSafeInteger(second) && first >= 0 && first <= second)) fail('consistency: need 0 <= first <= second');
  if (first === second) {
    if (consistencyPath.length !== 0) fail('consistency: a proof between equal sizes must be empty');
    if (!Buffer.from(firstHash).equals(secondHash)) fail('consistency: equal sizes with different roots');
    return;
  }
  if (first === 0) { if (consistencyPath.length !== 0) fail('consistency: a proof from the empty tree must be empty'); return; }
  // 1. An empty path fails.
  if (consistencyPath.length === 0) fail('consistency: empty path');
  // 2. If first is an exact power of 2, prepend first_hash.
  const cp = isPowerOfTwo(first) ? [firstHash, ...consistencyPath] : [...consistencyPath];
  // 3. fn = first - 1, sn = second - 1; 4. shift while LSB(fn).
  let fn = first - 1;
  let sn = second - 1;
  while (lsb(fn)) { fn = shift(fn); sn = shift(sn); }
  // 5. fr = sr = the first value.
  let fr: Uint8Array = cp[0]!;
  let sr: Uint8Array = cp[0]!;
  // 6. For each subsequent value c:
  for (const c of cp.slice(1)) {
    if (sn === 0) fail('consistency: the path is too long'); // a.
    if (lsb(fn) || fn === sn) { // b.
      fr = nodeHash(c, fr); // i.
      sr = nodeHash(c, sr); // ii.
      if (!lsb(fn)) while (!(lsb(fn) || fn === 0)) { fn = shift(fn); sn = shift(sn); } // iii.
    } else {
      sr = nodeHash(sr, c); // otherwise
    }
    fn = shift(fn); sn = shift(sn); // c.
  }
  // 7. fr = first_hash, sr = second_hash, sn = 0.
  if (sn !== 0) fail('consistency: the path is too short');
  if (!Buffer.from(fr).equals(firstHash)) fail('consistency: the path does not lead to the first root');
  if (!Buffer.from(sr).equals(secondHash)) fail('consistency: the path does not lead to the second root');
}

// ---- RFC 4648 §4 base64, strictly ----

export function base64(text: string): Buffer {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) fail(`base64: not standard padded base64: ${JSON.stringify(text)}`);
  const bytes = Buffer.from(text, 'base64');
  if (bytes.toString('base64') !== text) fail('base64: not canonical');
  return bytes;
}

// ---- C2SP signed-note ----

export const SIG_ED25519 = 0x01;
export const SIG_COSIGNATURE_V1 = 0x04;

export interface NoteSignatureLine { name: string; keyId: Buffer; signature: Buffer; line: string }
export interface ParsedNote { text: string; signatures: NoteSignatureLine[] }

/** Key names: non-empty, no Unicode spaces, no plus. */
export function checkKeyName(name: string): void {
  if (name.length === 0 || /[\p{White_Space}+]/u.test(name)) fail(`signed-note: bad key name ${JSON.stringify(name)}`);
}

/** key ID = SHA-256(key name || 0x0A || signature type || public key)[:4] */
export const keyId = (name: string, type: number, publicKey: Uint8Array): Buffer =>
  sha256(Buffer.from(name, 'utf8'), Uint8Array.of(0x0a, type), publicKey).subarray(0, 4);

/** Parses a note given as the bytes on the wire (it must be valid UTF-8). */
export function parseNote(wire: Uint8Array | string): ParsedNote {
  const bytes = typeof wire === 'string' ? Buffer.from(wire, 'utf8') : Buffer.from(wire);
  let note: string;
  try { note = new TextDecoder('utf-8', { fatal: true }).decode(bytes); } catch { return fail('signed-note: not valid UTF-8'); }
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) fail('signed-note: an ASCII control character other than newline');
  // The text ends in a newline; the last empty line separates it from the signatures.
  const sep = note.lastIndexOf('\n\n');
  if (sep < 0) fail('signed-note: no blank line before the signatures');
  const text = note.slice(0, sep + 1);
  const block = note.slice(sep + 2);
  if (!block.endsWith('\n') || block.length === 1) fail('signed-note: the signature lines must each end in a newline, and there must be one');
  const signatures = block.slice(0, -1).split('\n').map((line) => {
    // em dash (U+2014), space, key name, space, base64 signature.
    const m = /^\u2014 (\S+) (\S+)$/u.exec(line);
    if (!m) return fail(`signed-note: malformed signature line ${JSON.stringify(line)}`);
    checkKeyName(m[1]!);
    const blob = base64(m[2]!);
    if (blob.length < 5) fail('signed-note: a signature shorter than its 4-byte key ID');
    return { name: m[1]!, keyId: blob.subarray(0, 4), signature: blob.subarray(4), line: `${line}\n` };
  });
  return { text, signatures };
}

export interface Vkey { name: string; type: number; keyId: Buffer; publicKey: Buffer }

/** A verifier key: <name>+<8 hex digits of key ID>+<base64(type || public key)>, its ID checked. */
export function parseVkey(vkey: string): Vkey {
  const a = vkey.indexOf('+');
  const b = vkey.indexOf('+', a + 1);
  if (a < 0 || b < 0) fail('vkey: not name+hash+key');
  const name = vkey.slice(0, a);
  checkKeyName(name);
  const hash = vkey.slice(a + 1, b);
  if (!/^[0-9a-fA-F]{8}$/.test(hash)) fail('vkey: the key hash is not 8 hex digits');
  const material = base64(vkey.slice(b + 1));
  const type = material[0]!;
  const publicKey = material.subarray(1);
  if ((type === SIG_ED25519 || type === SIG_COSIGNATURE_V1) && publicKey.length !== 32) fail('vkey: an Ed25519 key is 32 bytes');
  const id = keyId(name, type, publicKey);
  if (!id.equals(Buffer.from(hash, 'hex'))) fail('vkey: the key hash is not SHA-256(name || 0x0A || type || key)[:4]');
  return { name, type, keyId: id, publicKey };
}

const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
export const ed25519Verify = (publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean =>
  signature.length === 64 && verify(null, message, createPublicKey({ key: Buffer.concat([SPKI_ED25519, publicKey]), format: 'der', type: 'spki' }), signature);

const matching = (note: ParsedNote, key: Vkey) => note.signatures.filter((s) => s.name === key.name && s.keyId.equals(key.keyId));

/**
 * Opens a note with one trusted Ed25519 (0x01) key: lines from other keys are ignored; a line from
 * the key that fails rejects the note; one must verify.
 */
export function openNote(wire: Uint8Array | string, key: Vkey): ParsedNote {
  if (key.type !== SIG_ED25519) fail('signed-note: not an Ed25519 (0x01) key');
  const note = parseNote(wire);
  const mine = matching(note, key);
  if (mine.length === 0) fail(`signed-note: no signature from ${key.name}`);
  for (const s of mine) if (!ed25519Verify(key.publicKey, Buffer.from(note.text, 'utf8'), s.signature)) fail(`signed-note: the signature from ${key.name} does not verify`);
  return note;
}

// ---- C2SP tlog-checkpoint ----

export interface CheckpointBody { origin: string; size: number; root: Buffer; extensions: string[] }

export function parseCheckpoint(text: string): CheckpointBody {
  if (!text.endsWith('\n')) fail('checkpoint: the text must end in a newline');
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3) fail('checkpoint: fewer than three lines');
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...string[]];
  if (origin.length === 0) fail('checkpoint: empty origin');
  if (!/^(0|[1-9][0-9]*)$/.test(size) || !Number.isSafeInteger(Number(size))) fail('checkpoint: the size is not ASCII decimal without leading zeroes');
  const hash = base64(root);
  if (hash.length !== 32) fail('checkpoint: the root is not a 32-byte SHA-256 hash');
  if (extensions.some((e) => e.length === 0)) fail('checkpoint: an empty extension line');
  return { origin, size: Number(size), root: hash, extensions };
}

// ---- C2SP tlog-cosignature (Ed25519, cosignature/v1) ----

/** The witness's cosignatures on the note that verify under `key` (type 0x04), with their timestamps. */
export function verifyCosignatures(wire: Uint8Array | string, key: Vkey): { timestamp: bigint }[] {
  if (key.type !== SIG_COSIGNATURE_V1) fail('cosignature: not a cosignature/v1 (0x04) key');
  const note = parseNote(wire);
  return matching(note, key).map((s) => {
    // timestamped_signature: u64 big-endian timestamp, then the 64-byte Ed25519 signature.
    if (s.signature.length !== 8 + 64) fail('cosignature: not a u64 timestamp and a 64-byte signature');
    const timestamp = s.signature.readBigUInt64BE(0);
    if (timestamp > 2n ** 63n - 1n) fail('cosignature: timestamp above 2^63 - 1');
    const message = Buffer.from(`cosignature/v1\ntime ${timestamp}\n${note.text}`, 'utf8');
    if (!ed25519Verify(key.publicKey, message, s.signature.subarray(8))) fail(`cosignature: the cosignature from ${key.name} does not verify`);
    return { timestamp };
  });
}

// ---- RFC 8785 (JCS), for the leaf bytes of decision 0600 ----

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail('JCS: a number that is not finite');
    return JSON.stringify(value); // ECMAScript Number serialization, which JCS adopts
  }
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    // Members sorted by their names' UTF-16 code units (JavaScript's default string order).
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return fail(`JCS: not JSON: ${typeof value}`);
}
