// What a served proof is anchored to: the root a signed checkpoint states, read from its note once
// the log key verifies it and its row agrees with it. The proof routes check what they are about to
// serve against that root with the domain's RFC 9162 verifiers (a few hashes per proof), so a damaged
// store answers 500 log_damaged instead of a proof a client would find false (decision 0652).
import { bytesEqual } from '../../domain/auditlog/bytes.ts';
import { openCheckpoint } from '../../domain/auditlog/checkpoint.ts';
import type { VerifierKey } from '../../domain/auditlog/note.ts';
import { Problem } from '../../http/problem.ts';
import { keptCosignatures, type StoredCheckpoint } from './checkpointer.ts';

/** Why a stored checkpoint is not what its signed note says (its size and root columns), or null when it is. */
export function checkpointContradiction(cp: StoredCheckpoint, logKey: VerifierKey): string | null {
  try {
    const signed = openCheckpoint(cp.note, [logKey]).checkpoint;
    if (signed.size !== cp.size || !bytesEqual(signed.root, cp.root)) return 'the stored checkpoint does not match its signed text';
  } catch (e) {
    return `the stored checkpoint is not signed by the log key: ${(e as Error).message}`;
  }
  return null;
}

/** The root a stored checkpoint's signed note states; 500 log_damaged when the note does not verify or contradicts its row. */
export function signedRoot(cp: StoredCheckpoint, logKey: VerifierKey): Uint8Array {
  const why = checkpointContradiction(cp, logKey);
  if (why) throw new Problem(500, 'log_damaged', `${why} (size ${cp.size}): its store is damaged, and no proof anchored to it is served; the verification route reports the same`);
  return cp.root; // the signed root: it matched
}

/** A stored checkpoint's cosignature lines, each with its newline, as a signed note carries them. */
export const cosignatureLines = (cp: StoredCheckpoint): string[] => (cp.cosignatures ?? '').split('\n').filter((l) => l.length > 0).map((l) => `${l}\n`);

/**
 * A witnessed checkpoint's stored cosignatures, checked before a proof carries them: only lines that
 * verify under the pinned witness key are ever stored (checkpointer.ts), so any other line means the
 * column was altered or the pinned key is not the one of the witness that cosigned. Served, such a
 * proof would fail `gavel audit verify` with that key: 500 log_damaged instead. Without a pinned
 * key there is nothing to check against (no witness is configured).
 */
export function checkCosignatures(cp: StoredCheckpoint, witnessVkey: string | undefined): void {
  if (cp.witnessed_at === null || witnessVkey === undefined) return;
  const lines = cosignatureLines(cp);
  if (lines.length > 0 && keptCosignatures(cp.note, lines, witnessVkey).length === lines.length) return;
  throw new Problem(500, 'log_damaged', `the stored cosignature of the witnessed checkpoint of size ${cp.size} does not verify under the pinned witness key (GAVEL_WITNESS_VKEY): the stored column was altered, or the key pinned is not the key of the witness that cosigned it; no proof anchored to it is served`);
}
