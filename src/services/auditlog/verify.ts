// Server-side verification of one event (spec 2.11): recompute the leaf from the stored row,
// check its inclusion path against the anchoring checkpoint (whose log signature is checked
// too), then ask the witness whether it cosigned that root and check the cosignature.
// INVALID only when the local proof fails; a witness that answers "never saw it" gives
// NOT_WITNESSED, one that cannot be consulted gives UNAVAILABLE. A witness that offers no lookup
// (any C2SP tlog-witness but Gavel's, decision 0602) cannot say what it holds: the cosignature it
// returned when the checkpoint was submitted, stored beside it and checked against the pinned key,
// is then the evidence.
import { toBase64 } from '../../domain/auditlog/bytes.ts';
import { openCheckpoint } from '../../domain/auditlog/checkpoint.ts';
import { verifyCosignatures } from '../../domain/auditlog/cosignature.ts';
import { bytesEqual } from '../../domain/auditlog/bytes.ts';
import { AuditLogError } from '../../domain/auditlog/errors.ts';
import { leafHashOfStoredEvent } from '../../domain/auditlog/leaf.ts';
import { parseVkey, type VerifierKey } from '../../domain/auditlog/note.ts';
import { verifyInclusion } from '../../domain/auditlog/verify.ts';
import { nodeHash } from '../../domain/auditlog/hash.ts';
import { isNodeStored, planInclusion, readerFromNodes } from '../../domain/auditlog/tree.ts';
import type { Db } from '../../store/store.ts';
import { cosignedCheckpoint } from '../../witness/client.ts';
import { cosignedNote, latestCheckpoint, type StoredCheckpoint } from './checkpointer.ts';
import { fromBlob, logIdentity, readNodes } from './log.ts';
import { inclusionFromStore, leafPastTheTree, loadEvent, notReady, unsequenced, type AuditLogDeps } from './proofs.ts';
import { Problem } from '../../http/problem.ts';
import { checkpointContradiction } from './anchoring.ts';

export type Verification = 'VERIFIED' | 'INVALID' | 'NOT_WITNESSED' | 'UNAVAILABLE';

export interface VerificationResult {
  verification: Verification;
  independently_witnessed: boolean;
  reason: string | null;
  evidence: {
    local_proof: 'valid' | 'invalid';
    /** No chain anchoring in this deployment. */
    chain_witness: null;
    /** Root (base64) of the checkpoint the event was checked against. */
    root: string;
    /** Size of that checkpoint. */
    anchored_height: number;
    /** 'witnessed' when the witness's cosignature on that checkpoint verified, else 'local'. */
    finality: 'witnessed' | 'local';
    leaf_index: number;
    /** Name of the witness consulted, or null. */
    witness: string | null;
  };
}

export interface VerifyDeps extends AuditLogDeps {
  witnessTimeoutMs?: number;
}

/**
 * Where a failed inclusion lies, so an auditor knows which row to look at: the event against the
 * leaf hash recorded when it was sequenced, then each leaf hash and stored node on its path against
 * what lies below it (its event; its two children), then the event's own stored ancestors against
 * what its leaf and path give. A few more reads, only on this failure path.
 */
async function locateAlteration(db: Db, projectId: string, id: string, leaf: Uint8Array, index: number, path: readonly Uint8Array[], cp: StoredCheckpoint): Promise<string> {
  const own = await db.selectFrom('audit_events').select('leaf_hash').where('leaf_index', '=', index).executeTakeFirst();
  if (own?.leaf_hash && !bytesEqual(fromBlob(own.leaf_hash), leaf)) {
    return `audit event ${id} no longer hashes to the leaf hash recorded for leaf ${index} when it was sequenced: its row (or that recorded hash) was altered`;
  }
  const { nodes } = planInclusion(index, cp.size);
  const leaves = nodes.filter((n) => n.level === 0).map((n) => n.index);
  if (leaves.length > 0) {
    const rows = await db.selectFrom('audit_events').select(['leaf_index', 'leaf_hash', 'id', 'project_id', 'kind', 'actor', 'created_at', 'data'])
      .where('leaf_index', 'in', leaves).execute();
    for (const r of rows) {
      if (r.leaf_hash && !bytesEqual(fromBlob(r.leaf_hash), leafHashOfStoredEvent(r))) {
        // The log is the installation's: a leaf beside this one may be another project's event, which is not named.
        const which = r.project_id === projectId ? `audit event ${r.id}` : 'an event of another project';
        return `the leaf hash recorded for leaf ${Number(r.leaf_index)} (${which}) does not match that event, and the path of leaf ${index} uses it: the hash or that event's row was altered`;
      }
    }
  }
  const inner = nodes.filter((n) => n.level > 0);
  const below = inner.flatMap((n) => [{ level: n.level - 1, index: 2 * n.index }, { level: n.level - 1, index: 2 * n.index + 1 }]);
  const read = readerFromNodes(await readNodes(db, [...inner, ...below]));
  for (const n of inner) {
    const [hash, left, right] = [read(n.level, n.index), read(n.level - 1, 2 * n.index), read(n.level - 1, 2 * n.index + 1)];
    if (hash && left && right && !bytesEqual(hash, nodeHash(left, right))) {
      const first = n.index * 2 ** n.level;
      return `stored node ${n.level}/${n.index} (leaves ${first}-${first + 2 ** n.level - 1}) does not match the two hashes below it, and the path of leaf ${index} uses it: it or one of them was altered`;
    }
  }
  // The path's nodes hold: the leaf and the path give the event's own stored ancestors otherwise.
  const ancestors = [];
  for (let level = 1; level <= path.length && isNodeStored(level, index >> level, cp.size); level++) ancestors.push({ level, index: index >> level });
  const stored = readerFromNodes(await readNodes(db, ancestors));
  let hash = leaf;
  for (const a of ancestors) {
    const sibling = path[a.level - 1]!;
    hash = (index >> (a.level - 1)) & 1 ? nodeHash(sibling, hash) : nodeHash(hash, sibling);
    const kept = stored(a.level, a.index);
    if (kept && !bytesEqual(kept, hash)) {
      const first = a.index * 2 ** a.level;
      return `leaf ${index} (audit event ${id}) and its path give stored node ${a.level}/${a.index} (leaves ${first}-${first + 2 ** a.level - 1}) otherwise than it is stored: the event with its recorded leaf hash, or a hash under that node, was rewritten`;
    }
  }
  return `the path of leaf ${index} does not lead to root ${toBase64(cp.root)}, though each node on it matches the two below it: the tree above its stored nodes, or the event with its recorded leaf hash, was rewritten`;
}

/** localCheck's answer when only the path fails: locateAlteration then says where. */
const INCLUSION_FAILED = 'inclusion';

function localCheck(logKey: VerifierKey, cp: StoredCheckpoint, leaf: Uint8Array, index: number, path: Uint8Array[] | AuditLogError): string | null {
  const contradiction = checkpointContradiction(cp, logKey);
  if (contradiction) return contradiction;
  if (path instanceof AuditLogError) return `the tree lacks a node the inclusion path of leaf ${index} needs: ${path.message}`;
  if (!verifyInclusion(leaf, index, cp.size, path, cp.root)) return INCLUSION_FAILED;
  return null;
}

export async function verifyProof(deps: VerifyDeps, projectId: string, auditId: string): Promise<VerificationResult> {
  const row = await loadEvent(deps.store.db, projectId, auditId);
  if (row.leaf_index === null) throw await unsequenced(deps, projectId, row.id);
  const index = row.leaf_index;
  const db = deps.store.db;
  const witnessed = await latestCheckpoint(db, { witnessed: true });
  const newest = await latestCheckpoint(db);
  const cp = witnessed && witnessed.size > index ? witnessed : newest && newest.size > index ? newest : undefined;
  if (!cp) {
    const past = await leafPastTheTree(deps.store, row.id, index);
    if (!past) throw notReady(deps, 'no checkpoint covers the event yet');
    if (!newest) throw new Problem(500, 'log_damaged', past);
    return {
      verification: 'INVALID', independently_witnessed: false, reason: past,
      evidence: { local_proof: 'invalid', chain_witness: null, root: toBase64(newest.root), anchored_height: newest.size, finality: 'local', leaf_index: index, witness: null },
    };
  }

  const id = await logIdentity(deps.store, deps.signer);
  const logKey = parseVkey(id.vkey);
  // The leaf of the row's bytes as stored, as it was computed when the event was written
  // (services/audit/record.ts), not of the row parsed back: a text that parses to the signed record
  // yet reads otherwise (a member named twice, the first of which SQLite's json_extract reads) was altered.
  const leaf = leafHashOfStoredEvent(row);
  let path: Uint8Array[] | AuditLogError;
  try { path = await inclusionFromStore(db, index, cp.size); } catch (e) {
    // A tree that cannot give the path fails the proof; a database that could not answer (a dropped
    // connection) is no verdict, and must not read as tampering: the error goes on (503).
    if (!(e instanceof AuditLogError)) throw e;
    path = e;
  }
  const checked = localCheck(logKey, cp, leaf, index, path);
  const localFailure = checked === INCLUSION_FAILED && !(path instanceof AuditLogError) ? await locateAlteration(db, projectId, row.id, leaf, index, path, cp) : checked;
  const base = { chain_witness: null, root: toBase64(cp.root), anchored_height: cp.size, leaf_index: index };
  if (localFailure) {
    return { verification: 'INVALID', independently_witnessed: false, reason: localFailure, evidence: { ...base, local_proof: 'invalid', finality: 'local', witness: null } };
  }
  const local = (verification: Verification, reason: string, witness: string | null = null): VerificationResult => ({
    verification, independently_witnessed: false, reason, evidence: { ...base, local_proof: 'valid', finality: 'local', witness },
  });
  if (!deps.witnessUrl) return local('UNAVAILABLE', 'no witness is configured for this log, so none could be consulted');

  const answer = await cosignedCheckpoint(deps.witnessUrl, id.origin, cp.root, { timeoutMs: deps.witnessTimeoutMs ?? 5000 });
  if (answer.kind === 'unavailable') return local('UNAVAILABLE', `the witness could not be consulted: ${answer.reason}`);
  if (answer.kind === 'not_found') return local('NOT_WITNESSED', `the witness answered that it never cosigned root ${toBase64(cp.root)} of ${id.origin}`);
  // Only the pinned key (GAVEL_WITNESS_VKEY, which configuration requires beside GAVEL_WITNESS_URL):
  // a key the witness announces would let any server answering at that URL be "independent".
  if (!deps.witnessVkey) return local('UNAVAILABLE', 'no witness key is pinned (GAVEL_WITNESS_VKEY)');
  const key = parseVkey(deps.witnessVkey);
  // A witness without the lookup: the cosignature it gave at submission, stored with the checkpoint.
  const stored = answer.kind === 'no_lookup';
  if (stored && cp.witnessed_at === null) return local('UNAVAILABLE', 'the witness offers no lookup of what it holds, and no cosignature of this checkpoint is stored yet', key.name);
  const note = stored ? cosignedNote(cp) : answer.note;
  let sameCheckpoint = false;
  try {
    const opened = openCheckpoint(note, [logKey]);
    sameCheckpoint = opened.checkpoint.size === cp.size && bytesEqual(opened.checkpoint.root, cp.root) && opened.checkpoint.origin === id.origin;
  } catch { sameCheckpoint = false; }
  let cosigned = false;
  try { cosigned = verifyCosignatures(note, [key]).length > 0; } catch { cosigned = false; }
  if (!sameCheckpoint || !cosigned) {
    return local('NOT_WITNESSED', `the witness's ${stored ? 'stored cosignature' : 'answer'} carries no valid cosignature by ${key.name} on this checkpoint`, key.name);
  }
  return {
    verification: 'VERIFIED', independently_witnessed: true,
    reason: stored ? 'the witness offers no lookup of what it holds (a C2SP tlog-witness); checked against the cosignature it returned when the checkpoint was submitted' : null,
    evidence: { ...base, local_proof: 'valid', finality: 'witnessed', witness: key.name },
  };
}
