// The witness's domain rule for C2SP tlog-witness add-checkpoint
// (https://c2sp.org/tlog-witness): parse the request, authenticate the checkpoint against the
// log keys configured for its origin, then decide against the latest checkpoint the witness
// cosigned for that origin. The adapter runs `decideCheckpoint` and the write of its result in
// one transaction, so the compare-and-swap cannot be raced into a rollback.
import { AuditLogError } from './errors.ts';
import { bytesEqual, fromBase64, toBase64 } from './bytes.ts';
import { HASH_SIZE } from './hash.ts';
import { openCheckpoint, type Checkpoint } from './checkpoint.ts';
import type { VerifierKey } from './note.ts';
import { verifyConsistency } from './verify.ts';

/** The protocol allows at most 63 consistency proof lines. */
export const MAX_PROOF_LINES = 63;

export interface AddCheckpointRequest {
  readonly oldSize: number;
  readonly proof: Uint8Array[];
  /** The signed checkpoint note, as received. */
  readonly note: string;
}

export function formatAddCheckpointRequest(oldSize: number, proof: readonly Uint8Array[], note: string): string {
  return `old ${oldSize}\n${proof.map((p) => `${toBase64(p)}\n`).join('')}\n${note}`;
}

export function parseAddCheckpointRequest(body: string): AddCheckpointRequest {
  if (typeof body !== 'string') throw new AuditLogError('malformed_note', 'body must be text');
  const m = /^old (0|[1-9][0-9]*)\n/.exec(body);
  if (!m || !Number.isSafeInteger(Number(m[1]))) throw new AuditLogError('malformed_note', 'missing or malformed old size line');
  let pos = m[0].length;
  const proof: Uint8Array[] = [];
  for (;;) {
    const nl = body.indexOf('\n', pos);
    if (nl < 0) throw new AuditLogError('malformed_note', 'missing empty line before the checkpoint');
    const line = body.slice(pos, nl);
    pos = nl + 1;
    if (line === '') break;
    if (proof.length === MAX_PROOF_LINES) throw new AuditLogError('malformed_note', 'too many consistency proof lines');
    const h = fromBase64(line);
    if (h.length !== HASH_SIZE) throw new AuditLogError('malformed_note', 'proof line is not a 32-byte hash');
    proof.push(h);
  }
  return { oldSize: Number(m[1]), proof, note: body.slice(pos) };
}

/** The logs a witness accepts: origin -> the log's Ed25519 verifier key(s). */
export type TrustedLogs = ReadonlyMap<string, readonly VerifierKey[]>;

export type CheckedRequest =
  | { readonly kind: 'ok'; readonly request: AddCheckpointRequest; readonly checkpoint: Checkpoint; readonly text: string }
  | { readonly kind: 'reject'; readonly status: 400 | 403 | 404; readonly reason: string };

/** Everything before the stored state is consulted: 400 malformed, 404 unknown origin, 403 bad signature. */
export function checkAddCheckpoint(body: string, logs: TrustedLogs): CheckedRequest {
  let request: AddCheckpointRequest;
  let origin: string;
  try {
    request = parseAddCheckpointRequest(body);
    const nl = request.note.indexOf('\n');
    origin = nl > 0 ? request.note.slice(0, nl) : '';
    if (!origin) throw new AuditLogError('malformed_note', 'checkpoint has no origin line');
  } catch (e) {
    return { kind: 'reject', status: 400, reason: e instanceof Error ? e.message : 'bad request' };
  }
  const keys = logs.get(origin);
  if (!keys) return { kind: 'reject', status: 404, reason: 'unknown log origin' };
  try {
    const opened = openCheckpoint(request.note, keys);
    if (opened.checkpoint.origin !== origin) return { kind: 'reject', status: 400, reason: 'origin mismatch' };
    return { kind: 'ok', request, checkpoint: opened.checkpoint, text: opened.note.text };
  } catch (e) {
    if (e instanceof AuditLogError && e.code === 'unverified_note') return { kind: 'reject', status: 403, reason: e.message };
    return { kind: 'reject', status: 400, reason: e instanceof Error ? e.message : 'bad request' };
  }
}

/** The latest checkpoint the witness cosigned for one origin. */
export interface WitnessedState {
  readonly size: number;
  readonly root: Uint8Array;
}

export type WitnessDecision =
  /** Cosign. `advance` is false when the checkpoint equals the stored one (a repeat). */
  | { readonly kind: 'accept'; readonly advance: boolean }
  /** 409 text/x.tlog.size: old size is not what the witness holds, or same size with another root. */
  | { readonly kind: 'conflict'; readonly size: number; readonly reason: 'old_size_mismatch' | 'root_mismatch' }
  /** 400: old size above the checkpoint size (a rollback attempt), or a proof where none belongs. */
  | { readonly kind: 'bad_request'; readonly reason: string }
  /** 422: the consistency proof does not verify, e.g. a fork. */
  | { readonly kind: 'inconsistent' };

export function decideCheckpoint(
  stored: WitnessedState | null,
  oldSize: number,
  proof: readonly Uint8Array[],
  checkpoint: Checkpoint,
): WitnessDecision {
  if (oldSize > checkpoint.size) return { kind: 'bad_request', reason: 'old size exceeds checkpoint size' };
  const heldSize = stored?.size ?? 0;
  if (oldSize !== heldSize) return { kind: 'conflict', size: heldSize, reason: 'old_size_mismatch' };
  if (stored !== null && oldSize === checkpoint.size) {
    if (!bytesEqual(stored.root, checkpoint.root)) return { kind: 'conflict', size: heldSize, reason: 'root_mismatch' };
    return proof.length === 0 ? { kind: 'accept', advance: false } : { kind: 'inconsistent' };
  }
  if (stored === null || oldSize === 0) {
    if (proof.length !== 0) return { kind: 'bad_request', reason: 'proof must be empty when old size is 0' };
    return { kind: 'accept', advance: true };
  }
  if (!verifyConsistency(oldSize, checkpoint.size, proof, stored.root, checkpoint.root)) return { kind: 'inconsistent' };
  return { kind: 'accept', advance: true };
}

/** HTTP status the protocol assigns to a decision. */
export function decisionStatus(d: WitnessDecision): 200 | 400 | 409 | 422 {
  switch (d.kind) {
    case 'accept':
      return 200;
    case 'conflict':
      return 409;
    case 'bad_request':
      return 400;
    case 'inconsistent':
      return 422;
  }
}
