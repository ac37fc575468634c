// Whether the stored log still extends what it signed and what the witness cosigned. A database
// restored from an older copy (or rows deleted) leaves a log shorter than, or different from, the
// newest checkpoint: the witness will never cosign it again. The checkpointer learns that only when
// it submits a new checkpoint; this check asks at once (at start, and now and then while idle), so
// that an idle service says so too (decision 0652, addendum).
import { bytesEqual } from '../../domain/auditlog/bytes.ts';
import { AuditLogError } from '../../domain/auditlog/errors.ts';
import { parseVkey } from '../../domain/auditlog/note.ts';
import { signCheckpoint } from '../../domain/auditlog/checkpoint.ts';
import { EMPTY_ROOT } from '../../domain/auditlog/hash.ts';
import type { Signer } from '../../signer/signer.ts';
import type { Db, Store, Tx } from '../../store/store.ts';
import { addCheckpoint, type WitnessClientOptions } from '../../witness/client.ts';
import { keptCosignatures, latestCheckpoint, MISSING_EVENTS, openWitnessProblem, rootOfSize, type WitnessOutcome } from './checkpointer.ts';
import { ensureLogState, logIdentity } from './log.ts';
import { checkpointContradiction } from './anchoring.ts';

/** The witness-problem kind of a log that no longer extends a checkpoint it signed or the witness holds. */
export const ROLLED_BACK = 'rolled_back';

export type ContinuityCheck =
  /** The log extends its newest checkpoint, and the witness holds the newest witnessed one. */
  | { kind: 'ok' }
  /** The log extends its newest checkpoint, which is not witnessed yet: the checkpointer's submission decides. */
  | { kind: 'pending' }
  /** The witness holds a larger size the log reaches: a new checkpoint submitted from there decides. */
  | { kind: 'witness_ahead'; size: number }
  | { kind: 'rolled_back'; reason: string }
  | Extract<WitnessOutcome, { kind: 'refused' | 'unavailable' | 'invalid_cosignature' | 'conflict' }>;

/**
 * Compares the stored tree with its newest signed checkpoint (any instance can), then, when that
 * checkpoint is witnessed, re-submits it to the witness (C2SP: `old` = its size, no proof), which
 * cosigns it again only if it still holds exactly that; otherwise it names the size it holds.
 */
export async function checkContinuity(store: Store, signer: Signer, witness: { url: string; vkey: string } | undefined, timeoutMs = 5000, signal?: AbortSignal): Promise<ContinuityCheck> {
  // The checkpoint before the state: the tree only grows between the two reads.
  const latest = await latestCheckpoint(store.db);
  const state = await ensureLogState(store);
  if (!latest) return witness ? askWitnessWithoutCheckpoint(store, signer, witness, state.size, { timeoutMs, ...(signal ? { signal } : {}) }) : { kind: 'ok' };
  if (latest.size > state.size) {
    return { kind: 'rolled_back', reason: `the log signed a checkpoint of size ${latest.size} on ${latest.created_at} and holds fewer events now (a restore from an older copy, or deleted rows)` };
  }
  let root: Uint8Array;
  try { root = await rootOfSize(store.db, latest.size); } catch (e) {
    if (!(e instanceof AuditLogError && e.code === 'missing_node')) throw e;
    return { kind: 'rolled_back', reason: `the log lacks a node under its checkpoint of size ${latest.size} (a partial restore, or deleted rows): ${e.message}` };
  }
  // The row's root is compared only once it is the one its note signs: an altered row is named as
  // such, not taken for a history replaced under an intact note.
  const contradiction = checkpointContradiction(latest, parseVkey((await logIdentity(store, signer)).vkey));
  if (contradiction) return { kind: 'rolled_back', reason: `${contradiction} (size ${latest.size}): the checkpoint's row was altered in the database` };
  if (!bytesEqual(root, latest.root)) {
    return { kind: 'rolled_back', reason: `the log's first ${latest.size} events no longer hash to the root of its checkpoint of size ${latest.size} (its history was replaced)` };
  }
  const missing = await missingEvents(store, latest.size);
  if (missing) return { kind: 'rolled_back', reason: missing };
  if (!witness) return { kind: 'ok' };
  if (latest.witnessed_at === null) return { kind: 'pending' };
  const r = await addCheckpoint(witness.url, latest.size, [], latest.note, { timeoutMs, ...(signal ? { signal } : {}) });
  if (r.kind === 'cosigned') {
    // Only a cosignature under the pinned key says the witness holds this checkpoint.
    return keptCosignatures(latest.note, r.cosignatures, witness.vkey).length > 0
      ? { kind: 'ok' }
      : { kind: 'invalid_cosignature', reason: `the witness answered without a cosignature by ${parseVkey(witness.vkey).name}` };
  }
  if (r.kind === 'conflict') {
    if (r.size > state.size) return rolledBackBehind(r.size);
    if (r.size > latest.size) return { kind: 'witness_ahead', size: r.size };
  }
  return r;
}

/** Leaves counted by one check after a process's first, which counts every leaf under the checkpoint. */
const SWEEP_LEAVES = 65_536;

/** A store's sweep: where the next range starts, and a range found short, counted again until it is whole. */
const sweeps = new WeakMap<Store, { next: number; short?: { from: number; to: number } }>();

/**
 * Whether events under the checkpoint are missing: the root above compares the stored peaks only,
 * and a leaf's hash lives in its event's row (decision 0603), so an event row deleted under the
 * checkpoint leaves every node standing. Each leaf index below `size` has exactly one event
 * (leaf_index is unique): a range holding fewer events than leaves lost rows. The first check of a
 * process counts them all (at start); later ones count a range of SWEEP_LEAVES in turn, so that a
 * check stays a bounded index scan on the thread that answers, and a range once found short again
 * first, so that the rollback is not cleared until it is whole.
 */
async function missingEvents(store: Store, size: number): Promise<string | undefined> {
  let sweep = sweeps.get(store);
  const ranges: { from: number; to: number }[] = [];
  if (!sweep) {
    sweep = { next: size };
    sweeps.set(store, sweep);
    ranges.push({ from: 0, to: size });
  } else {
    if (sweep.short) ranges.push({ from: sweep.short.from, to: Math.min(sweep.short.to, size) });
    const from = sweep.next >= size ? 0 : sweep.next;
    sweep.next = Math.min(size, from + SWEEP_LEAVES);
    ranges.push({ from, to: sweep.next });
  }
  for (const { from, to } of ranges) {
    if (to <= from) continue;
    const row = await store.db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('leaf_index', '>=', from).where('leaf_index', '<', to).executeTakeFirstOrThrow();
    const held = Number(row.n);
    if (held < to - from) {
      sweep.short = { from, to };
      return `${MISSING_EVENTS}the log holds ${held} of the ${to - from} events with leaf indexes ${from} to ${to - 1}, under its checkpoint of size ${size} (deleted rows, or a partial restore)`;
    }
  }
  sweep.short = undefined;
  return undefined;
}

/**
 * A log without a signed checkpoint (new, or restored from a copy that holds none, even one of no
 * events) asks what the witness holds for its origin by submitting a checkpoint of its empty prefix
 * (size 0, `old 0`, no proof: C2SP). A witness holding nothing cosigns it; one holding more than
 * the log has answers 409 with its size: the log was rolled back. Nothing is stored on our side, and
 * any other answer (a refusal, an outage) is left to the checkpointer's first submission.
 */
async function askWitnessWithoutCheckpoint(store: Store, signer: Signer, witness: { url: string; vkey: string }, size: number, opts: WitnessClientOptions): Promise<ContinuityCheck> {
  const id = await logIdentity(store, signer);
  const note = await signCheckpoint({ origin: id.origin, size: 0, root: EMPTY_ROOT }, id.noteSigner);
  const r = await addCheckpoint(witness.url, 0, [], note, opts);
  if (r.kind === 'conflict' && r.size > size) return rolledBackBehind(r.size);
  if (r.kind === 'conflict' && r.size > 0) return { kind: 'witness_ahead', size: r.size };
  if (r.kind === 'unavailable') return r;
  // Only a cosignature under the pinned key says the witness holds nothing more.
  return r.kind === 'cosigned' && keptCosignatures(note, r.cosignatures, witness.vkey).length > 0 ? { kind: 'ok' } : { kind: 'pending' };
}

/** The witness holds a checkpoint of `held` leaves, more than the log has. (The reason stays the same as the log grows: it is logged and recorded when it changes.) */
const rolledBackBehind = (held: number): ContinuityCheck & { kind: 'rolled_back' } => ({
  kind: 'rolled_back',
  reason: `the witness holds a checkpoint of size ${held}, larger than the log (a restore from an older copy, or deleted rows)`,
});

/**
 * A submission's outcome as the log's standing: a witness holding more than the log has, or
 * refusing because the log's history does not extend what it holds (422), means the log was rolled
 * back or replaced, not a passing disagreement.
 */
export function classifyWitnessOutcome<T extends WitnessOutcome>(outcome: T, logSize: number): T | (ContinuityCheck & { kind: 'rolled_back' }) {
  if (outcome.kind === 'conflict' && outcome.size > logSize) return rolledBackBehind(outcome.size);
  if (outcome.kind === 'refused' && outcome.status === 422) {
    return { kind: 'rolled_back', reason: `the witness refused the log's newest checkpoint as not extending the one it holds (its history was replaced, e.g. rolled back and written again): ${outcome.reason}` };
  }
  return outcome;
}

/** The rollback the leader recorded, unless a cosignature or a later check put it right; null otherwise. */
export async function openRollback(db: Db | Tx): Promise<{ reason: string | null; at: string } | null> {
  const open = await openWitnessProblem(db);
  return open?.kind === ROLLED_BACK ? { reason: open.reason, at: open.at } : null;
}
