// Every decision and security-relevant mutation writes an audit event inside the same transaction
// as the change it describes, so the event is durable exactly when the change is (invariant 1).
// The sequencer later gives each committed event its gapless leaf index in the Merkle log.
import canonicalize from 'canonicalize';
import { execFixed, fixedSql, type SqlTarget } from '../../store/fixed-sql.ts';
import { newId } from '../../lib/ids.ts';
import type { Tx } from '../../store/store.ts';

export interface AuditInput {
  projectId: string;
  kind: string;
  /** `prn_…`, `key_…`, or `system`. */
  actor: string;
  data: Record<string, unknown>;
  /** Event time; defaults to now. */
  at?: Date;
}

const INSERT = fixedSql(`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index)
  values (?, ?, ?, ?, ?, ?, null)`);

/** `target` runs the insert as fixed SQL (the writer's procedures pass theirs: every decision does this). */
export async function recordAudit(trx: Tx, input: AuditInput, target?: SqlTarget): Promise<string> {
  const id = newId('aud');
  const params = [id, input.projectId, input.kind, input.actor, (input.at ?? new Date()).toISOString(), canonicalize(input.data) ?? '{}'];
  await execFixed(trx, target, INSERT, params);
  return id;
}
