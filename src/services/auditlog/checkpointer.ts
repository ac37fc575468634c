// Checkpointer: signs the tree head as a C2SP checkpoint when due (every interval or every N
// events) and asks the witness to cosign the newest one, with a consistency proof from the last
// size the witness is believed to hold. Checkpoints are immutable rows keyed by size; only the
// cosignature columns are filled in later.
import { bytesEqual } from '../../domain/auditlog/bytes.ts';
import { signCheckpoint } from '../../domain/auditlog/checkpoint.ts';
import { AuditLogError } from '../../domain/auditlog/errors.ts';
import { verifyCosignatures } from '../../domain/auditlog/cosignature.ts';
import { parseVkey } from '../../domain/auditlog/note.ts';
import { assemble, planConsistency, planRoot, readerFromNodes } from '../../domain/auditlog/tree.ts';
import type { Signer } from '../../signer/signer.ts';
import type { Db, Store, Tx } from '../../store/store.ts';
import { addCheckpoint, type AddCheckpointResult } from '../../witness/client.ts';
import { blob, ensureLogState, fromBlob, logIdentity, readNodes } from './log.ts';
import type { AuditCheckpointsTable } from '../../store/schema/auditlog.ts';

/** A checkpoint row as stored: the table's type (store/schema/auditlog.ts). */
export type StoredCheckpoint = AuditCheckpointsTable;

const columns = ['size', 'root', 'note', 'created_at', 'cosignatures', 'witnessed_at'] as const;

function toCheckpoint(r: { size: number; root: Uint8Array; note: string; created_at: string; cosignatures: string | null; witnessed_at: string | null }): StoredCheckpoint {
  return { ...r, size: Number(r.size), root: fromBlob(r.root) };
}

/** The note with the witness's cosignatures appended (a valid signed note, as verifiers take it). */
export const cosignedNote = (cp: StoredCheckpoint): string => cp.note + (cp.cosignatures ?? '');

export async function latestCheckpoint(db: Db | Tx, options: { witnessed?: boolean } = {}): Promise<StoredCheckpoint | undefined> {
  let q = db.selectFrom('audit_checkpoints').select(columns).orderBy('size', 'desc').limit(1);
  if (options.witnessed) q = q.where('witnessed_at', 'is not', null);
  const row = await q.executeTakeFirst();
  return row ? toCheckpoint(row) : undefined;
}

export async function checkpointAt(db: Db | Tx, size: number): Promise<StoredCheckpoint | undefined> {
  const row = await db.selectFrom('audit_checkpoints').select(columns).where('size', '=', size).executeTakeFirst();
  return row ? toCheckpoint(row) : undefined;
}

/** The RFC 6962 root of the first `size` leaves, from stored nodes (one query). */
export async function rootOfSize(db: Db | Tx, size: number): Promise<Uint8Array> {
  const plan = planRoot(size);
  return assemble(plan, readerFromNodes(await readNodes(db, plan.nodes)))[0] as Uint8Array;
}

/** RFC 9162 consistency proof from size m to size n, from stored nodes (one query). */
export async function consistencyFromStore(db: Db | Tx, m: number, n: number): Promise<Uint8Array[]> {
  const plan = planConsistency(m, n);
  return assemble(plan, readerFromNodes(await readNodes(db, plan.nodes)));
}

/** How the reason of a rollback found as event rows missing under a checkpoint begins (continuity.ts). */
export const MISSING_EVENTS = 'event rows missing under a signed checkpoint: ';

export interface CheckpointPolicy {
  /** Sign when this long has passed since the last checkpoint (and the tree grew). */
  intervalMs: number;
  /** Or when this many events were integrated since the last checkpoint. */
  maxEvents: number;
}

/**
 * Signs a checkpoint of the current tree when it grew and the policy says it is due (or `force`).
 * Returns the new checkpoint, or undefined when none was due.
 */
export async function checkpointIfDue(store: Store, signer: Signer, now: Date, policy: CheckpointPolicy, force = false): Promise<StoredCheckpoint | undefined> {
  const state = await ensureLogState(store);
  if (state.size === 0) return undefined;
  const last = await latestCheckpoint(store.db);
  if (last && last.size >= state.size) return undefined;
  // A last checkpoint later than now: the clock stepped back, and the time since cannot be told.
  // Due, rather than none until the clock passes it again (an hour's step, an hour of unprovable events).
  const since = last ? now.getTime() - Date.parse(last.created_at) : 0;
  const due = force || !last || state.size - last.size >= policy.maxEvents || since >= policy.intervalMs || since < 0;
  if (!due) return undefined;
  // What is signed is the state row's size and root: they must be the stored tree's. A row altered
  // or restored apart from the tree would have the log key sign a root no later checkpoint can be
  // proven to extend (a fork, to whoever fetched it). One read of the root's peaks.
  const stored = await rootOfSize(store.db, state.size);
  if (!bytesEqual(stored, state.root)) {
    throw new AuditLogError('state_mismatch', `the log's state row names size ${state.size} with a root its stored tree does not have at that size (the row altered, or restored apart from the tree): no checkpoint is signed until they agree`);
  }
  const id = await logIdentity(store, signer);
  const note = await signCheckpoint({ origin: id.origin, size: state.size, root: state.root }, id.noteSigner);
  const cp: StoredCheckpoint = { size: state.size, root: state.root, note, created_at: now.toISOString(), cosignatures: null, witnessed_at: null };
  // Keyed by size: a checkpoint of one size is one root, so a duplicate is the same checkpoint.
  await store.db.insertInto('audit_checkpoints')
    .values({ ...cp, root: blob(cp.root) })
    .onConflict((oc) => oc.column('size').doNothing()).execute();
  return cp;
}

export type WitnessOutcome =
  | { kind: 'nothing_to_do' }
  | { kind: 'no_witness' }
  | { kind: 'cosigned'; size: number }
  /** The witness answered 200 with no cosignature its pinned key verifies: nothing is stored. */
  | { kind: 'invalid_cosignature'; reason: string }
  /** The log no longer extends a checkpoint it signed or the witness holds (services/auditlog/continuity.ts). */
  | { kind: 'rolled_back'; reason: string }
  | Exclude<AddCheckpointResult, { kind: 'cosigned' }>;

/**
 * The lines of a witness's answer that verify under its pinned key. Any other line (one naming the
 * log's key, say, which fails the log's signature check) would make every proof of the checkpoint
 * unverifiable, so only these are kept.
 */
export function keptCosignatures(note: string, lines: readonly string[], vkey: string): string[] {
  const key = parseVkey(vkey);
  return lines.filter((line) => {
    try { return verifyCosignatures(note + line, [key]).length > 0; } catch { return false; }
  });
}

/**
 * Submits the newest checkpoint to the witness unless it is already cosigned. `old` is the size
 * of the newest cosigned checkpoint; on a 409 the witness names the size it holds and we retry
 * once from there (e.g. after a crash between the witness's answer and our commit).
 */
export async function witnessLatest(store: Store, witness: { url: string; vkey: string } | undefined, now: Date, timeoutMs = 5000, signal?: AbortSignal): Promise<WitnessOutcome> {
  const latest = await latestCheckpoint(store.db);
  if (!latest || latest.witnessed_at !== null) return { kind: 'nothing_to_do' };
  if (!witness) return { kind: 'no_witness' };
  const witnessUrl = witness.url;
  let old = (await latestCheckpoint(store.db, { witnessed: true }))?.size ?? 0;
  for (let attempt = 0; attempt < 2; attempt++) {
    const proof = old > 0 && old < latest.size ? await consistencyFromStore(store.db, old, latest.size) : [];
    const r = await addCheckpoint(witnessUrl, old, proof, latest.note, { timeoutMs, ...(signal ? { signal } : {}) });
    if (r.kind === 'cosigned') {
      // Stored only once the pinned key verifies it: a checkpoint marked witnessed is one a witness
      // holding that key vouched for, whatever lines the answer carried.
      const kept = keptCosignatures(latest.note, r.cosignatures, witness.vkey);
      if (kept.length === 0) {
        return { kind: 'invalid_cosignature', reason: `the witness answered without a cosignature by ${parseVkey(witness.vkey).name}` };
      }
      // The cosignature puts the witness's last problem right (openWitnessProblem): cleared here, not
      // judged by comparing the two timestamps, which a clock stepped back between them would invert.
      await store.transaction(async (trx) => {
        await trx.updateTable('audit_checkpoints')
          .set({ cosignatures: kept.join(''), witnessed_at: now.toISOString() })
          .where('size', '=', latest.size).execute();
        // Except event rows found missing under a checkpoint (continuity.ts): the witness cosigns
        // the next checkpoint all the same (its proof reads no leaf), so only the rows put back, found
        // by the continuity check, clear that.
        await trx.deleteFrom('audit_witness_problem').where('id', '=', 1)
          .where((eb) => eb.or([eb('reason', 'is', null), eb('reason', 'not like', `${MISSING_EVENTS}%`)])).execute();
      });
      return { kind: 'cosigned', size: latest.size };
    }
    if (r.kind === 'conflict' && attempt === 0 && r.size <= latest.size && r.size !== old) {
      old = r.size;
      continue;
    }
    // C2SP: a 409 naming the size of the checkpoint sent, with that size as `old`, is the same size
    // under another root: the witness holds another history of this log (a fork), not a race.
    if (r.kind === 'conflict' && r.size === old && old === latest.size) {
      return { kind: 'rolled_back', reason: `the witness holds a checkpoint of size ${old} with another root than the log's (its history was replaced, e.g. rolled back and written again, or signed by a second log with its key)` };
    }
    return r;
  }
  return { kind: 'nothing_to_do' };
}

/**
 * The witness's last refusal or absence, unless it has cosigned a checkpoint since (witnessLatest
 * then deleted it: the problem is put right); null when there is none. Read by the dashboard and by
 * a proof not ready yet.
 */
export async function openWitnessProblem(db: Db | Tx): Promise<{ kind: string; reason: string | null; at: string } | null> {
  return (await db.selectFrom('audit_witness_problem').select(['kind', 'reason', 'at']).where('id', '=', 1).executeTakeFirst()) ?? null;
}
