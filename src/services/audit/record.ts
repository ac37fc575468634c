// Every decision and security-relevant mutation writes an audit event inside the same transaction
// as the change it describes, so the event is durable exactly when the change is (invariant 1).
// The sequencer later gives each committed event its gapless leaf index in the Merkle log.
import canonicalize from 'canonicalize';
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

export async function recordAudit(trx: Tx, input: AuditInput): Promise<string> {
  const id = newId('aud');
  await trx.insertInto('audit_events').values({
    id,
    project_id: input.projectId,
    kind: input.kind,
    actor: input.actor,
    created_at: (input.at ?? new Date()).toISOString(),
    data: canonicalize(input.data) ?? '{}',
    leaf_index: null,
  }).execute();
  return id;
}
