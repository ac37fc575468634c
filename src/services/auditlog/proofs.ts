// Inclusion and consistency proofs served from stored nodes: each is one query for the
// O(log n) nodes its plan names (planInclusion / planConsistency), then pure assembly.
import { toBase64 } from '../../domain/auditlog/bytes.ts';
import { LEAF_VERSION, leafHashOfStoredEvent, type AuditEventRecord, type JsonValue } from '../../domain/auditlog/leaf.ts';
import { parseVkey } from '../../domain/auditlog/note.ts';
import { verifyConsistency, verifyInclusion } from '../../domain/auditlog/verify.ts';
import { assemble, planInclusion, readerFromNodes } from '../../domain/auditlog/tree.ts';
import { AuditLogError } from '../../domain/auditlog/errors.ts';
import { Problem, retryLater } from '../../http/problem.ts';
import type { Signer } from '../../signer/signer.ts';
import type { AuditEventsTable } from '../../store/schema/core.ts';
import type { Db, Store, Tx } from '../../store/store.ts';
import { checkpointAt, consistencyFromStore, cosignedNote, latestCheckpoint, openWitnessProblem, rootOfSize, type StoredCheckpoint } from './checkpointer.ts';
import { ensureLogState, logIdentity, readNodes } from './log.ts';
import { checkCosignatures, cosignatureLines, signedRoot } from './anchoring.ts';
import { openRollback, ROLLED_BACK } from './continuity.ts';
import { parseJsonExactly } from '../../lib/json-parse.ts';
import { sql } from 'kysely';

export interface AuditLogDeps {
  store: Store;
  signer: Signer;
  /** Whether a witness is configured: then only witnessed checkpoints anchor proofs. */
  witnessUrl: string | undefined;
  /** Seconds a client should wait before asking again for a proof that is not ready. */
  retryAfterSeconds: number;
  /** The witness's cosignature/v1 vkey, pinned by configuration: a served proof's cosignatures verify under it. */
  witnessVkey?: string | undefined;
}

/** An audit event as stored, less the insertion hint `seq`. */
export type AuditEventRow = Omit<AuditEventsTable, 'seq' | 'leaf_hash'>;

export interface AuditProof {
  audit_event_id: string;
  leaf_version: string;
  leaf_index: number;
  /** Size of the checkpoint the path leads to. */
  tree_size: number;
  /** Root of that checkpoint, base64. */
  root: string;
  /** RFC 9162 inclusion path, leaf side first, base64 hashes. */
  path: string[];
  /** Size of the witnessed checkpoint anchoring this proof (= tree_size); null when not witnessed. */
  anchored_height: number | null;
  witnessed: boolean;
  /** The signed checkpoint with the witness's cosignature lines appended (a signed note). */
  checkpoint: string;
  cosignatures: string[];
  /** The log's verifier key (convenience: a verifier should pin it from another channel). */
  log_vkey: string;
  /** The event record whose leaf the path starts from (leaf_version gavel-audit-v1). */
  event: AuditEventRecord;
}

export async function loadEvent(db: Db | Tx, projectId: string, auditId: string): Promise<AuditEventRow> {
  const row = await db.selectFrom('audit_events')
    .select(['id', 'project_id', 'kind', 'actor', 'created_at', 'data', 'leaf_index'])
    .where('id', '=', auditId).where('project_id', '=', projectId).executeTakeFirst();
  if (!row) {
    // While a rollback is open, a missing event may be one the restored copy lost: said so (the same
    // for every missing id, so it tells nothing of other projects' events).
    const rollback = await openRollback(db);
    const lost = rollback ? `; the log was rolled back since ${rollback.at} (${rollback.reason ?? ROLLED_BACK}): an event it lost is not found either` : '';
    throw new Problem(404, 'not_found', `no audit event ${auditId} in this project${lost}`);
  }
  return { ...row, leaf_index: row.leaf_index === null ? null : Number(row.leaf_index) };
}

export function notReady(deps: AuditLogDeps, detail: string, retryAfterSeconds = deps.retryAfterSeconds): Problem {
  return retryLater(409, 'proof_not_ready', `${detail}; retry after ${retryAfterSeconds} s`, retryAfterSeconds, { retry_after_seconds: retryAfterSeconds });
}

/**
 * Why an event's leaf index is damage rather than not ready: the tree does not reach it. The
 * sequencer writes an index and the size that counts it in one transaction, so such a row was
 * altered or restored apart from the log. Read only where no checkpoint covers the event (one
 * primary-key read), after the event: the size read is as new as the index or newer.
 */
export async function leafPastTheTree(store: Store, id: string, index: number): Promise<string | undefined> {
  const { size } = await ensureLogState(store);
  return index >= size ? `audit event ${id} names leaf ${index}, but the tree holds ${size} leaves: the sequencer writes both in one transaction, so its row was altered or restored apart from the log` : undefined;
}

/**
 * The answer for an event without a leaf index: not ready, unless the log has sequenced it, so its
 * index was erased and it will never get another. SQLite commits in seq order and the sequencer
 * takes only the events after the last one it sequenced, whose seq the state row records (migration
 * 0608): an event at or before it says so, the newest leaf's included.
 * On PostgreSQL a lower seq can commit after a higher one; the sequencer takes only events marked
 * pending and clears the mark as it sets the index (migration 0607): no mark says so.
 */
export async function unsequenced(deps: AuditLogDeps, projectId: string, id: string): Promise<Problem> {
  const erased = (why: string) => new Problem(500, 'log_damaged', `audit event ${id} has no leaf index, ${why}, so its row was altered (its leaf index erased) and it will not be sequenced again; the verification route reports the same`);
  // The columns exist on one engine each (last_seq: migration 0608; pending: 0607), hence raw SQL.
  if (deps.store.dialect === 'sqlite') {
    const { rows } = await sql<{ seq: number; last_seq: number }>`select e.seq, s.last_seq from audit_events e, audit_log_state s
      where e.id = ${id} and e.project_id = ${projectId} and e.leaf_index is null and s.id = 1`.execute(deps.store.db);
    if (rows[0] && Number(rows[0].seq) <= Number(rows[0].last_seq)) {
      return erased(`yet the log has sequenced every event written through seq ${rows[0].last_seq}, and it is seq ${rows[0].seq}: the log sequences in write order`);
    }
  } else {
    const { rows } = await sql<{ pending: boolean | null }>`select pending from audit_events where id = ${id} and project_id = ${projectId} and leaf_index is null`.execute(deps.store.db);
    if (rows[0] && rows[0].pending !== true) return erased('yet the log sequenced it: the sequencer clears its pending mark as it sets the index');
  }
  return notReady(deps, 'the event is not sequenced into the log yet');
}

/** How long to wait when the witness is refusing or unreachable: no next checkpoint will be cosigned sooner by itself. */
const WITNESS_PROBLEM_RETRY_SECONDS = 30;

/** RFC 9162 inclusion path of leaf `index` in the tree of `size` leaves (one query). */
export async function inclusionFromStore(db: Db | Tx, index: number, size: number): Promise<Uint8Array[]> {
  const plan = planInclusion(index, size);
  return assemble(plan, readerFromNodes(await readNodes(db, plan.nodes)));
}

/**
 * The checkpoint that anchors proofs for leaf `index`: the newest witnessed one when a witness is
 * configured, else the newest signed one. Undefined when it does not cover the leaf yet.
 */
export async function anchorFor(deps: AuditLogDeps, index: number): Promise<StoredCheckpoint | undefined> {
  const cp = await latestCheckpoint(deps.store.db, { witnessed: deps.witnessUrl !== undefined });
  return cp && cp.size > index ? cp : undefined;
}

export async function proofFor(deps: AuditLogDeps, projectId: string, auditId: string): Promise<AuditProof> {
  const row = await loadEvent(deps.store.db, projectId, auditId);
  if (row.leaf_index === null) throw await unsequenced(deps, projectId, row.id);
  const cp = await anchorFor(deps, row.leaf_index);
  if (!cp) {
    const past = await leafPastTheTree(deps.store, row.id, row.leaf_index);
    if (past) throw new Problem(500, 'log_damaged', `${past}; the verification route reports the same`);
    if (!deps.witnessUrl) throw notReady(deps, 'no signed checkpoint covers the event yet');
    // While the witness refuses or cannot be reached, say so: retrying every second would not help.
    const problem = await openWitnessProblem(deps.store.db);
    if (problem?.kind === ROLLED_BACK) {
      throw notReady(deps, `no witnessed checkpoint covers the event, and none will until the log is put right: since ${problem.at} it does not extend what the witness holds (rolled_back: ${problem.reason ?? ''})`, WITNESS_PROBLEM_RETRY_SECONDS);
    }
    if (problem) {
      throw notReady(deps, `no witnessed checkpoint covers the event yet, and the witness has not cosigned since ${problem.at} (${problem.kind}${problem.reason ? `: ${problem.reason}` : ''})`, WITNESS_PROBLEM_RETRY_SECONDS);
    }
    throw notReady(deps, 'no witnessed checkpoint covers the event yet');
  }
  const path = await inclusionFromStore(deps.store.db, row.leaf_index, cp.size).catch((e: unknown) => {
    // The store lacks a node a signed checkpoint covers: the log is damaged (a row deleted, a restore
    // from a partial copy). Said as such, for the operator and the auditor, not as an anonymous 500.
    if (e instanceof AuditLogError && e.code === 'missing_node') {
      throw new Problem(500, 'log_damaged', `the log lacks a node the inclusion path of leaf ${row.leaf_index} in the tree of ${cp.size} needs: its store is damaged (${e.message}); the verification route reports the same`);
    }
    throw e;
  });
  // Served only once it proves something: the path from the event's leaf (of its row as stored, as
  // the verification route computes it) must lead to the root its checkpoint's signed note states.
  const logVkey = (await logIdentity(deps.store, deps.signer)).vkey;
  const root = signedRoot(cp, parseVkey(logVkey));
  // A stored text that no longer parses is log_damaged, as the event lists say; never exported as the record.
  const event: AuditEventRecord = { id: row.id, project_id: row.project_id, kind: row.kind, actor: row.actor, created_at: row.created_at, data: storedEventData(row.id, row.data) as JsonValue };
  if (!verifyInclusion(leafHashOfStoredEvent(row), row.leaf_index, cp.size, path, root)) {
    throw new Problem(500, 'log_damaged', `the inclusion path of leaf ${row.leaf_index} in the tree of ${cp.size}, from the stored nodes, does not lead to the root its signed checkpoint states: a leaf hash or node on the path, or the event's row, was altered; the verification route says INVALID and where`);
  }
  checkCosignatures(cp, deps.witnessVkey);
  const witnessed = cp.witnessed_at !== null;
  return {
    audit_event_id: row.id,
    leaf_version: LEAF_VERSION,
    leaf_index: row.leaf_index,
    tree_size: cp.size,
    root: toBase64(root),
    path: path.map(toBase64),
    anchored_height: witnessed ? cp.size : null,
    witnessed,
    checkpoint: cosignedNote(cp),
    cosignatures: cosignatureLines(cp),
    log_vkey: logVkey,
    event,
  };
}

export interface ConsistencyResult {
  from: number;
  to: number;
  /** RFC 9162 consistency proof, base64 hashes (empty when from is 0 or equals to). */
  proof: string[];
  from_root: string;
  to_root: string;
  /** The signed (and, when cosigned, witnessed) checkpoints at those sizes, if there are any. */
  from_checkpoint: string | null;
  to_checkpoint: string | null;
}

/**
 * RFC 9162 consistency proof between two sizes, checked before it is served. A size with a checkpoint
 * reports the root its signed note states; any other size the root of the stored nodes, which the
 * check anchors: `to`'s by a consistency proof to the newest checkpoint (computed here, not served),
 * `from`'s by the proof served, which must lead from it to `to`'s root.
 */
export async function consistencyBetween(deps: AuditLogDeps, from: number, to: number): Promise<ConsistencyResult> {
  const latest = await latestCheckpoint(deps.store.db);
  const max = latest?.size ?? 0;
  if (!(from <= to)) throw new Problem(400, 'invalid_request', 'from must not exceed to', { errors: [{ pointer: '/from', in: 'query', code: 'out_of_range', message: 'from must not exceed to' }] });
  if (to > max) throw new Problem(400, 'invalid_request', `to exceeds the newest checkpoint size ${max}`, { errors: [{ pointer: '/to', in: 'query', code: 'out_of_range', message: `at most ${max}` }] });
  const db = deps.store.db;
  const logKey = parseVkey((await logIdentity(deps.store, deps.signer)).vkey);
  const [fromCp, toCp] = await Promise.all([checkpointAt(db, from), checkpointAt(db, to)]);
  // `to` without a checkpoint of its own (and not the empty tree) is anchored to the newest one.
  const anchor = !toCp && to > 0 ? latest : undefined;
  // Opened before any read starts: a throw among started reads would leave them unawaited.
  const [fromSigned, toSigned, anchorRoot] = [fromCp, toCp, anchor].map((cp) => cp && signedRoot(cp, logKey));
  for (const cp of [fromCp, toCp]) if (cp) checkCosignatures(cp, deps.witnessVkey);
  const [proof, fromRoot, toRoot, toAnchor] = await Promise.all([
    consistencyFromStore(db, from, to),
    fromSigned ?? rootOfSize(db, from),
    toSigned ?? rootOfSize(db, to),
    anchor ? consistencyFromStore(db, to, anchor.size) : [],
  ]).catch((e: unknown) => {
    // As for an inclusion proof: a node under a signed checkpoint is gone, so the log is damaged.
    if (e instanceof AuditLogError && e.code === 'missing_node') {
      throw new Problem(500, 'log_damaged', `the log lacks a node the consistency proof from ${from} to ${to} needs: its store is damaged (${e.message})`);
    }
    throw e;
  });
  const contradicted = (what: string) => new Problem(500, 'log_damaged', `${what}: a node or leaf hash the stored tree gives it was altered, so no proof is served`);
  if (anchor && anchorRoot && !verifyConsistency(to, anchor.size, toAnchor, toRoot, anchorRoot)) {
    throw contradicted(`the stored tree's root of size ${to}, which no checkpoint signs, is not consistent with the root the newest checkpoint (size ${anchor.size}) signs`);
  }
  if (!verifyConsistency(from, to, proof, fromRoot, toRoot)) {
    throw contradicted(`the stored tree's consistency proof from ${from} to ${to} does not lead from the root of ${from} to the root of ${to}${toCp ? ' its checkpoint signs' : ''}`);
  }
  return {
    from, to, proof: proof.map(toBase64), from_root: toBase64(fromRoot), to_root: toBase64(toRoot),
    from_checkpoint: fromCp ? cosignedNote(fromCp) : null, to_checkpoint: toCp ? cosignedNote(toCp) : null,
  };
}

export interface AuditEventView {
  id: string;
  kind: string;
  actor: string;
  created_at: string;
  data: unknown;
  leaf_index: number | null;
}

/**
 * An event's stored `data`, read. Text that no longer parses was damaged in the store (every event
 * is written as JSON by the service): `log_damaged`, not the caller's fault, and its leaf no
 * longer recomputes, so the verification route says INVALID for it.
 */
export function storedEventData(id: string, text: string): unknown {
  try { return parseJsonExactly(text); } catch {
    throw new Problem(500, 'log_damaged', `the stored data of audit event ${id} is not JSON: its store is damaged; the verification route reports the same`);
  }
}

/**
 * Events of a project, newest first by id, paged with limit+1. A walk to the end holds every event
 * committed before its first page, and a later commit whose id sorts below its cursor; by leaf
 * index it would miss every later commit (decision 0653).
 */
export async function listAuditEvents(db: Db, projectId: string, before: string | undefined, limit: number): Promise<AuditEventView[]> {
  let q = db.selectFrom('audit_events').select(['id', 'kind', 'actor', 'created_at', 'data', 'leaf_index'])
    .where('project_id', '=', projectId).orderBy('id', 'desc').limit(limit + 1);
  if (before !== undefined) q = q.where('id', '<', before);
  const rows = await q.execute();
  return rows.map((r) => ({ ...r, data: storedEventData(r.id, r.data), leaf_index: r.leaf_index === null ? null : Number(r.leaf_index) }));
}
