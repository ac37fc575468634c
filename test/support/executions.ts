// An execution row as a decision reserves it (in flight, no outcome), written directly: for tests of
// what recovery and outcome recording do to such a row, without a merchant call in progress.
import { newId } from '../../src/lib/ids.ts';
import type { Store } from '../../src/store/store.ts';

export async function seedInFlight(store: Store, projectId: string, instanceId = 'test'): Promise<string> {
  const id = newId('exe');
  await store.db.insertInto('executions').values({
    id, project_id: projectId, nonce: `n-${id}`, fingerprint: 'f'.repeat(64), decision_id: newId('dec'), decision_audit_id: newId('aud'),
    policy_version: 1, agent: 'did:key:z6MkTest', action: 'pay', resource: 'resource://shop/1', merchant: 'shop', operation: 'ok',
    status: 'IN_FLIGHT', note: null, http_status: null, instance_id: instanceId, created_at: new Date().toISOString(),
    completed_at: null, resolved_at: null, resolved_by: null, resolution_note: null,
  }).execute();
  return id;
}
