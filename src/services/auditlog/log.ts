// What every audit-log service shares: the log's identity (origin, key), the event record a leaf
// hashes, and node reads.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { EMPTY_ROOT } from '../../domain/auditlog/hash.ts';
import { plainView } from '../../domain/auditlog/bytes.ts';
import { leafHashOfStoredEvent, type AuditEventRecord, type JsonValue } from '../../domain/auditlog/leaf.ts';
import { ed25519NoteSigner, formatVkey, SIG_TYPE_ED25519, type NoteSigner } from '../../domain/auditlog/note.ts';
import { nodePos, type NodeAddress, type StoredNode } from '../../domain/auditlog/tree.ts';
import type { Signer } from '../../signer/signer.ts';
import type { Db, Store, Tx } from '../../store/store.ts';
import { Problem } from '../../http/problem.ts';
import type { AuditEventsTable } from '../../store/schema/core.ts';
import { parseJsonExactly } from '../../lib/json-parse.ts';

/** Signer key that signs checkpoints. Every instance sharing one log must hold the same key. */
export const LOG_KEY = 'checkpoint-log';

export interface LogState {
  origin: string;
  size: number;
  root: Uint8Array;
}

/** A hash as both drivers bind it (better-sqlite3 binds Buffers, not bare Uint8Arrays). */
export const blob = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
/** A BLOB/BYTEA read back as a plain Uint8Array view. */
export const fromBlob = plainView;

/**
 * The state row is gone while the log it describes is not (a partial restore, a deleted row): a
 * start refuses it, and a route that needs the row while the service runs answers 500 log_damaged.
 */
export class LogStateMissing extends Problem {
  constructor(detail: string) { super(500, 'log_damaged', detail); }
}

/**
 * The log's state row, created on first use with a fresh installation origin
 * `gavel.local/<16 hex>/log` (one log per installation; events carry their project_id).
 * Only for a log that has never sequenced: a new origin over sequenced leaves would start a second
 * log at index 0 beside them, under a name no witness or auditor knows.
 */
export async function ensureLogState(store: Store): Promise<LogState> {
  const row = await store.db.selectFrom('audit_log_state').select(['origin', 'size', 'root']).where('id', '=', 1).executeTakeFirst();
  if (row) return { origin: row.origin, size: Number(row.size), root: fromBlob(row.root) };
  const sequenced = await store.db.selectFrom('audit_events').select('leaf_index').where('leaf_index', 'is not', null).limit(1).executeTakeFirst()
    ?? await store.db.selectFrom('audit_checkpoints').select('size').limit(1).executeTakeFirst();
  if (sequenced) {
    throw new LogStateMissing('the audit log\'s state row (audit_log_state) is missing while the log holds sequenced events or checkpoints: '
      + 'the database was restored in part or the row was deleted; restore the row from the same backup as the rest of the log (docs/audit-log.md)');
  }
  const origin = `gavel.local/${randomBytes(8).toString('hex')}/log`;
  await store.db.insertInto('audit_log_state')
    .values({ id: 1, origin, size: 0, root: blob(EMPTY_ROOT), updated_at: new Date().toISOString() })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  // Another instance may have won the insert: read back whatever is there.
  const won = await store.db.selectFrom('audit_log_state').select(['origin', 'size', 'root']).where('id', '=', 1).executeTakeFirstOrThrow();
  return { origin: won.origin, size: Number(won.size), root: fromBlob(won.root) };
}

export interface LogIdentity {
  origin: string;
  /** The log's public key as a signed-note vkey (type 0x01), named by the origin. */
  vkey: string;
  noteSigner: NoteSigner;
}

export async function logIdentity(store: Store, signer: Signer): Promise<LogIdentity> {
  const { origin } = await ensureLogState(store);
  const pub = await signer.publicKey(LOG_KEY);
  return {
    origin,
    vkey: formatVkey(origin, SIG_TYPE_ED25519, pub),
    noteSigner: ed25519NoteSigner(origin, pub, (m) => signer.sign(LOG_KEY, m)),
  };
}

/** The record a leaf hashes (leaf_version gavel-audit-v1): the stored row with `data` parsed. */
export function eventRecord(row: Pick<AuditEventsTable, 'id' | 'project_id' | 'kind' | 'actor' | 'created_at' | 'data'>): AuditEventRecord {
  let data: JsonValue;
  try { data = parseJsonExactly(row.data) as JsonValue; } catch { data = row.data; }
  return { id: row.id, project_id: row.project_id, kind: row.kind, actor: row.actor, created_at: row.created_at, data };
}

/**
 * Fetches the given nodes: a single leaf's hash from its event (level 0 is not stored in
 * audit_nodes, decision 0603), every larger subtree from audit_nodes, one query each.
 */
export async function readNodes(db: Db | Tx, addresses: readonly NodeAddress[]): Promise<StoredNode[]> {
  const leaves = addresses.filter((a) => a.level === 0);
  const subtrees = addresses.filter((a) => a.level > 0);
  const out: StoredNode[] = [];
  if (leaves.length > 0) {
    // An event written before its row carried its leaf hash is hashed from its text, as the
    // sequencer does (the stored text is canonical: leafHashOfStoredEvent).
    const rows = await db.selectFrom('audit_events')
      .select(['leaf_index', 'leaf_hash', 'id', 'project_id', 'kind', 'actor', 'created_at', 'data'])
      .where('leaf_index', 'in', leaves.map((a) => a.index)).execute();
    for (const r of rows) out.push({ level: 0, index: Number(r.leaf_index), hash: r.leaf_hash ? fromBlob(r.leaf_hash) : leafHashOfStoredEvent(r) });
  }
  if (subtrees.length > 0) {
    // By the table's key (pos, level): migration 0602.
    const values = sql.join(subtrees.map((a) => sql`(cast(${nodePos(a.level, a.index)} as bigint), cast(${a.level} as bigint))`));
    const rows = await sql<{ level: number; idx: number; hash: Uint8Array }>`select level, idx, hash from audit_nodes where (pos, level) in (values ${values})`.execute(db);
    for (const r of rows.rows) out.push({ level: Number(r.level), index: Number(r.idx), hash: fromBlob(r.hash) });
  }
  return out;
}
