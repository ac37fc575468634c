// Every decision and security-relevant mutation writes an audit event inside the same transaction
// as the change it describes, so the event is durable exactly when the change is (invariant 1).
// The sequencer later gives each committed event its gapless leaf index in the Merkle log (on the
// SQLite writer thread, usually as the event is written: auditlog/inline.ts).
import canonicalize from 'canonicalize';
import { execFixed, fixedSql, type SqlTarget } from '../../store/fixed-sql.ts';
import { newId } from '../../lib/ids.ts';
import type { Tx } from '../../store/store.ts';
import { leafHashOfStoredEvent } from '../../domain/auditlog/leaf.ts';
import { inlineSequencer } from '../auditlog/inline.ts';

export interface AuditInput {
  projectId: string;
  kind: string;
  /** `prn_…`, `key_…`, or `system`. */
  actor: string;
  /** The event's data; already canonical text when its writer emits it in JCS order itself. */
  data: Record<string, unknown> | CanonicalJson;
  /** Event time; defaults to now. */
  at?: Date;
}

/** JSON text that is already RFC 8785 canonical (domain/decision/event.ts writes one so). */
export class CanonicalJson {
  readonly text: string;
  constructor(text: string) { this.text = text; }
}

// leaf_index is null unless the SQLite writer's inline sequencer assigns it here.
const INSERT = fixedSql(`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index)
  values (?, ?, ?, ?, ?, ?, ?)`);

/** `target` runs the insert as fixed SQL (the writer's procedures pass theirs: every decision does this). */
export async function recordAudit(trx: Tx, input: AuditInput, target?: SqlTarget): Promise<string> {
  const id = newId('aud');
  const event = { id, project_id: input.projectId, kind: input.kind, actor: input.actor, created_at: (input.at ?? new Date()).toISOString(), data: input.data instanceof CanonicalJson ? input.data.text : canonicalize(input.data) ?? '{}' };
  const inline = inlineSequencer();
  if (inline?.active) {
    // The SQLite writer thread: the event takes its leaf index now (services/auditlog/inline.ts).
    const { lastInsertRowid } = inline.statement(INSERT.sqlite).run(id, event.project_id, event.kind, event.actor, event.created_at, event.data, inline.nextLeafIndex());
    inline.added(Number(lastInsertRowid), leafHashOfStoredEvent(event));
    return id;
  }
  await execFixed(trx, target, INSERT, [id, event.project_id, event.kind, event.actor, event.created_at, event.data, null]);
  return id;
}
