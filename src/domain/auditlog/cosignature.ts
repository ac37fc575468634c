// C2SP tlog-cosignature v1 for Ed25519 (https://c2sp.org/tlog-cosignature): the witness signs
// "cosignature/v1\ntime <seconds>\n" || checkpoint text, and the signature line carries
// keyID(type 0x04) || u64 big-endian timestamp || 64-byte Ed25519 signature.
import { AuditLogError } from './errors.ts';
import { concat, utf8 } from './bytes.ts';
import {
  findKey,
  formatSignatureLine,
  keyId,
  parseNote,
  SIG_TYPE_COSIGNATURE_V1,
  verifyEd25519,
  type NoteSignature,
  type SignFn,
  type VerifierKey,
} from './note.ts';

export interface Cosigner {
  readonly name: string;
  readonly publicKey: Uint8Array;
  sign: SignFn;
}

export function cosignerKeyId(name: string, publicKey: Uint8Array): Uint8Array {
  return keyId(name, SIG_TYPE_COSIGNATURE_V1, publicKey);
}

function checkTimestamp(t: number): void {
  if (!Number.isSafeInteger(t) || t < 0) throw new AuditLogError('invalid_size', 'timestamp must be non-negative seconds');
}

/** The exact bytes a cosignature/v1 signs. */
export function cosignatureMessage(checkpointText: string, timestamp: number): Uint8Array {
  checkTimestamp(timestamp);
  return utf8.encode(`cosignature/v1\ntime ${timestamp}\n${checkpointText}`);
}

export function formatCosignatureLine(name: string, publicKey: Uint8Array, timestamp: number, signature: Uint8Array): string {
  checkTimestamp(timestamp);
  const ts = new Uint8Array(8);
  new DataView(ts.buffer).setBigUint64(0, BigInt(timestamp));
  return formatSignatureLine(name, cosignerKeyId(name, publicKey), concat(ts, signature));
}

/** Cosigns checkpoint text at `timestamp` (POSIX seconds, from the caller's clock). */
export async function cosignCheckpoint(checkpointText: string, cosigner: Cosigner, timestamp: number): Promise<string> {
  const sig = await cosigner.sign(cosignatureMessage(checkpointText, timestamp));
  return formatCosignatureLine(cosigner.name, cosigner.publicKey, timestamp, sig);
}

/** The timestamp of a cosignature/v1 signature, or undefined when it has the wrong shape. */
export function cosignatureTimestamp(sig: NoteSignature): number | undefined {
  if (sig.signature.length !== 72) return undefined;
  const t = new DataView(sig.signature.buffer, sig.signature.byteOffset, 8).getBigUint64(0);
  return t <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(t) : undefined;
}

export function verifyCosignature(checkpointText: string, sig: NoteSignature, key: VerifierKey): { timestamp: number } | undefined {
  if (key.type !== SIG_TYPE_COSIGNATURE_V1 || !findKey(sig, [key])) return undefined;
  const timestamp = cosignatureTimestamp(sig);
  if (timestamp === undefined) return undefined;
  const ok = verifyEd25519(key.publicKey, cosignatureMessage(checkpointText, timestamp), sig.signature.subarray(8));
  return ok ? { timestamp } : undefined;
}

export interface VerifiedCosignature {
  readonly witness: VerifierKey;
  readonly timestamp: number;
}

/**
 * The known witnesses (type 0x04 keys) whose cosignatures on the note verify. Unknown lines
 * (including the log's own signature) are ignored; a known witness line that fails rejects the
 * whole note (AuditLogError `unverified_note`), as a known log signature does (note.ts, openNote;
 * C2SP signed-note): a valid line of the same witness beside it does not excuse it.
 */
export function verifyCosignatures(note: string, witnessKeys: readonly VerifierKey[]): VerifiedCosignature[] {
  const parsed = parseNote(note);
  const witnesses = witnessKeys.filter((k) => k.type === SIG_TYPE_COSIGNATURE_V1);
  const out: VerifiedCosignature[] = [];
  for (const sig of parsed.signatures) {
    const key = findKey(sig, witnesses);
    if (!key) continue;
    const v = verifyCosignature(parsed.text, sig, key);
    if (!v) throw new AuditLogError('unverified_note', `a cosignature by witness ${key.name} does not verify: the note is rejected`);
    if (!out.some((o) => o.witness === key)) out.push({ witness: key, timestamp: v.timestamp });
  }
  return out;
}
