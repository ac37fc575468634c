// Every decision and security-relevant mutation writes an audit event inside the same transaction
// as the change it describes, so the event is durable exactly when the change is (invariant 1).
// The sequencer later gives each committed event its gapless leaf index in the Merkle log (on the
// SQLite writer thread, usually as the event is written: auditlog/inline.ts).
import canonicalize from 'canonicalize';
import { execFixed, fixedSql, runFixed, type FixedSql, type SqlTarget } from '../../store/fixed-sql.ts';
import { newStampedId } from '../../lib/ids.ts';
import { toIso } from '../../lib/time.ts';
import type { Db, Tx } from '../../store/store.ts';
import type { StatementSource } from '../../store/sqlite/dialect.ts';
import { leafHashOfStoredEvent } from '../../domain/auditlog/leaf.ts';
import { inlineSequencer } from '../auditlog/inline.ts';
import { blob } from '../auditlog/log.ts';

export interface AuditInput {
  projectId: string;
  kind: string;
  /** `prn_…`, `key_…`, or `system`. */
  actor: string;
  /** The event's data; already canonical text when its writer emits it in JCS order itself. */
  data: Record<string, unknown> | CanonicalJson;
  /** Event time; defaults to now. A string must be RFC 3339 UTC as toIso writes it (a plan's time). */
  at?: Date | string;
}

/** JSON text that is already RFC 8785 canonical (domain/decision/event.ts writes one so). */
export class CanonicalJson {
  readonly text: string;
  constructor(text: string) { this.text = text; }
}

// The event's columns, in the order its row's values are bound. Every event is written with its
// leaf hash: the sequencer need not read its text back, and the tree keeps no node of a single
// leaf (decision 0603). leaf_index is null unless the SQLite writer's inline sequencer assigns it
// as the event is written.
/** The head of an INSERT of events (hashedEventValues' order, leaf_index before leaf_hash). */
export const INSERT_HASHED_INTO = 'insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index, leaf_hash)';
const INSERT_INLINE = `${INSERT_HASHED_INTO} values (?, ?, ?, ?, ?, ?, ?, ?)`;
const INSERT_HASHED = fixedSql(`${INSERT_HASHED_INTO} values (?, ?, ?, ?, ?, ?, null, ?)`);

/** An event's values for INSERT_HASHED_INTO, leaf_index aside: its six columns, then its leaf hash. */
const hashedEventValues = (event: ReturnType<typeof auditEventRow>): unknown[] =>
  [event.id, event.project_id, event.kind, event.actor, event.created_at, event.data, blob(leafHashOfStoredEvent(event))];

/**
 * The row an audit event is stored as (before its leaf index), with a new id minted from its
 * created_at, not from a clock read of its own: a window on created_at is then a range of ids
 * (window.ts), whichever clock stamped the event (the service's may be a test's).
 */
export function auditEventRow(input: AuditInput): { id: string; project_id: string; kind: string; actor: string; created_at: string; data: string } {
  const at = input.at ?? new Date();
  const createdAt = typeof at === 'string' ? at : toIso(at);
  return { id: newStampedId('aud', typeof at === 'string' ? stampMs(at) : at.getTime()), project_id: input.projectId, kind: input.kind, actor: input.actor, created_at: createdAt, data: input.data instanceof CanonicalJson ? input.data.text : canonicalize(input.data) ?? '{}' };
}

// A decision's event is stamped with its plan's time as text; most share their millisecond.
let lastStamp = '';
let lastStampMs = 0;
/** Date.parse(stamp), remembered for the last stamp asked. */
function stampMs(stamp: string): number {
  if (stamp !== lastStamp) { lastStampMs = Date.parse(stamp); lastStamp = stamp; }
  return lastStampMs;
}

/** `target` runs the insert as fixed SQL (the writer's procedures pass theirs: every decision does this). */
export async function recordAudit(trx: Tx, input: AuditInput, target?: SqlTarget): Promise<string> {
  const event = auditEventRow(input);
  const id = event.id;
  const inline = inlineSequencer();
  if (inline?.active) {
    // The SQLite writer thread: the event takes its leaf index now (services/auditlog/inline.ts).
    insertSqlite((text) => inline.statement(text), INSERT_INLINE, event, []);
    return id;
  }
  await execFixed(trx, target, INSERT_HASHED, hashedEventValues(event));
  return id;
}

/**
 * SQLite: runs `text` (the event's eight columns, then `params`) and reports whether it inserted;
 * on the writer thread the event takes its leaf index as it is written.
 */
function insertSqlite(prepare: StatementSource['prepare'], text: string, event: ReturnType<typeof auditEventRow>, params: readonly unknown[]): boolean {
  const inline = inlineSequencer();
  const leafIndex = inline?.active ? inline.nextLeafIndex() : null;
  const hash = leafHashOfStoredEvent(event);
  const { changes, lastInsertRowid } = prepare(text)
    .run(event.id, event.project_id, event.kind, event.actor, event.created_at, event.data, leafIndex, blob(hash), ...params);
  if (changes === 0) return false;
  if (inline?.active) inline.added(Number(lastInsertRowid), hash);
  return true;
}

/**
 * SQLite, on the connection the transaction holds: inserts `event` only if `condition` (SQL, with
 * `params` bound to its placeholders) holds, as one statement. Returns whether it was inserted.
 * On the writer thread the event takes its leaf index as recordAudit's do.
 */
export function recordAuditIf(raw: StatementSource, event: ReturnType<typeof auditEventRow>, condition: string, params: readonly unknown[]): boolean {
  let text = INSERT_IF.get(condition);
  if (text === undefined) INSERT_IF.set(condition, text = `${INSERT_SELECT} where ${condition}`);
  return insertSqlite((sql) => raw.prepare(sql), text, event, params);
}
const INSERT_SELECT = `${INSERT_HASHED_INTO} select ?, ?, ?, ?, ?, ?, ?, ?`;

/**
 * SQLite, on the connection the transaction holds: inserts `event` unconditionally, for a caller
 * that has made its checks in this transaction already (services/authorize/one-statement.ts).
 * On the writer thread the event takes its leaf index as recordAudit's do.
 */
export function recordAuditChecked(raw: StatementSource, event: ReturnType<typeof auditEventRow>): void {
  insertSqlite((sql) => raw.prepare(sql), INSERT_INLINE, event, []);
}

/**
 * PostgreSQL, outside any transaction: one statement that runs `change` (a data-modifying statement
 * with RETURNING; its parameters come first) and inserts the event only if it returned a row, so
 * the change and its audit event commit together or not at all. Returns whether it did.
 */
export async function recordAuditWith(db: Db | Tx, change: string, params: readonly unknown[], input: AuditInput): Promise<boolean> {
  let query = AFTER_CHANGE.get(change);
  if (query === undefined) {
    AFTER_CHANGE.set(change, query = fixedSql(`with changed as (${change})
      ${INSERT_HASHED_INTO} select ?, ?, ?, ?, ?, ?, null, ? where exists (select 1 from changed) returning id`, { prepared: true }));
  }
  const rows = await runFixed<{ id: string }>(db, 'postgres', query, [...params, ...hashedEventValues(auditEventRow(input))]);
  return rows.length === 1;
}
/** recordAuditWith's statements, by the change's text (callers pass a few fixed ones). */
const AFTER_CHANGE = new Map<string, FixedSql>();
/** The statement's text by condition (callers pass a few fixed conditions; one string each). */
const INSERT_IF = new Map<string, string>();
