// C2SP tlog-checkpoint (https://c2sp.org/tlog-checkpoint): note text
// "<origin>\n<size>\n<base64 root>\n" plus optional non-empty extension lines.
import { AuditLogError } from './errors.ts';
import { fromBase64, toBase64 } from './bytes.ts';
import { HASH_SIZE } from './hash.ts';
import { openNote, signNote, type Note, type NoteSigner, type VerifierKey } from './note.ts';

export interface Checkpoint {
  readonly origin: string;
  readonly size: number;
  readonly root: Uint8Array;
  readonly extensions?: readonly string[];
}

export function formatCheckpoint(cp: Checkpoint): string {
  if (typeof cp.origin !== 'string' || cp.origin.length === 0 || cp.origin.includes('\n')) {
    throw new AuditLogError('malformed_note', 'origin must be a non-empty single line');
  }
  if (!Number.isSafeInteger(cp.size) || cp.size < 0) throw new AuditLogError('invalid_size', 'size must be a non-negative safe integer');
  if (!(cp.root instanceof Uint8Array) || cp.root.length !== HASH_SIZE) throw new AuditLogError('malformed_note', 'root must be 32 bytes');
  const ext = cp.extensions ?? [];
  for (const e of ext) {
    if (e.length === 0 || e.includes('\n')) throw new AuditLogError('malformed_note', 'extension lines must be non-empty single lines');
  }
  return [cp.origin, String(cp.size), toBase64(cp.root), ...ext].join('\n') + '\n';
}

export function parseCheckpoint(text: string): Checkpoint {
  if (typeof text !== 'string' || !text.endsWith('\n')) throw new AuditLogError('malformed_note', 'checkpoint must end with a newline');
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3 || lines.some((l) => l.length === 0)) throw new AuditLogError('malformed_note', 'checkpoint needs three non-empty lines');
  const [origin, sizeLine, rootLine, ...extensions] = lines as [string, string, string, ...string[]];
  if (!/^(0|[1-9][0-9]*)$/.test(sizeLine) || !Number.isSafeInteger(Number(sizeLine))) {
    throw new AuditLogError('malformed_note', 'checkpoint size must be a decimal without leading zeroes');
  }
  const root = fromBase64(rootLine);
  if (root.length !== HASH_SIZE) throw new AuditLogError('malformed_note', 'checkpoint root must be 32 bytes');
  return { origin, size: Number(sizeLine), root, extensions };
}

/** Signs a checkpoint as a signed note; the log's key name should equal the origin. */
export async function signCheckpoint(cp: Checkpoint, signer: NoteSigner): Promise<string> {
  return signNote(formatCheckpoint(cp), [signer]);
}

export interface OpenedCheckpoint {
  readonly checkpoint: Checkpoint;
  readonly note: Note;
  readonly verifiedBy: VerifierKey[];
}

/** Verifies a signed checkpoint against the log's key(s) and parses it. */
export function openCheckpoint(note: string, logKeys: readonly VerifierKey[]): OpenedCheckpoint {
  const opened = openNote(note, logKeys);
  return { checkpoint: parseCheckpoint(opened.note.text), note: opened.note, verifiedBy: opened.verifiedBy };
}
