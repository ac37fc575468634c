// A decision is recorded once, as its audit event (migration 0604): tests read decisions there.
import type { Db } from '../../src/store/store.ts';
import { canonicalDecisionData, type DecisionEventData } from '../../src/domain/decision/event.ts';
import { newStampedId } from '../../src/lib/ids.ts';

export type RecordedDecision = DecisionEventData & { audit_id: string; created_at: string };

/** Every decision recorded, oldest first. */
export async function recordedDecisions(db: Db): Promise<RecordedDecision[]> {
  const rows = await db.selectFrom('audit_events').select(['id', 'created_at', 'data']).where('kind', '=', 'decision').orderBy('seq').execute();
  return rows.map((r) => ({ ...(JSON.parse(r.data) as DecisionEventData), audit_id: r.id, created_at: r.created_at }));
}

/** The decision whose audit event is `auditId`. */
export async function recordedDecision(db: Db, auditId: string): Promise<RecordedDecision> {
  const found = (await recordedDecisions(db)).find((d) => d.audit_id === auditId);
  if (!found) throw new Error(`no decision recorded with audit event ${auditId}`);
  return found;
}

/**
 * Writes a decision's audit event directly, as a past decision (for replay tests). Its id is minted
 * from its created_at, as the service's are (audit/record.ts): monotonic, so events written in one
 * millisecond still list newest first in order, and within the range a window on created_at reads.
 */
export async function insertDecisionEvent(db: Db, projectId: string, data: DecisionEventData, at = new Date().toISOString()): Promise<void> {
  await db.insertInto('audit_events').values({ id: newStampedId('aud', Date.parse(at)), project_id: projectId, kind: 'decision', actor: 'system', created_at: at, data: canonicalDecisionData(data), leaf_index: null }).execute();
}
