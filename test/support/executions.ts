// Execution rows written directly. An in-flight one is as a decision reserves it (no outcome): for
// tests of what recovery and outcome recording do to such a row, without a merchant call in progress.
import { newId } from '../../src/lib/ids.ts';
import type { Store } from '../../src/store/store.ts';

export async function seedInFlight(store: Store, projectId: string, instanceId = 'test'): Promise<string> {
  return seedExecution(store, projectId, { instanceId });
}

/** Another instance, beating now, with a call in flight (`other` in the instance table): its execution's id. */
export async function otherInstanceInFlight(store: Store, projectId: string, instanceId = 'other'): Promise<string> {
  const now = new Date().toISOString();
  await store.db.insertInto('execution_instances').values({ id: instanceId, started_at: now, heartbeat_at: now }).execute();
  return seedInFlight(store, projectId, instanceId);
}

/** An execution row written directly; a settled one (SUCCEEDED, FAILED) is left alone by every recovery sweep. */
export async function seedExecution(store: Store, projectId: string, opts: { instanceId?: string; status?: 'IN_FLIGHT' | 'SUCCEEDED' | 'FAILED' } = {}): Promise<string> {
  const id = newId('exe');
  const status = opts.status ?? 'IN_FLIGHT';
  const at = new Date().toISOString();
  await store.db.insertInto('executions').values({
    id, project_id: projectId, nonce: `n-${id}`, fingerprint: 'f'.repeat(64), decision_id: newId('dec'), decision_audit_id: newId('aud'),
    policy_version: 1, agent: 'did:key:z6MkTest', action: 'pay', resource: 'resource://shop/1', merchant: 'shop', operation: 'ok',
    status, note: null, http_status: null, instance_id: opts.instanceId ?? 'test', created_at: at,
    completed_at: status === 'IN_FLIGHT' ? null : at, resolved_at: null, resolved_by: null, resolution_note: null,
  }).execute();
  return id;
}
