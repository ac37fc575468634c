// What the dashboard counts (services/dashboard/sections.ts): only the project's own rows, only
// obligations still pending and not expired, and the log's size as sequenced, checkpointed or not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { dashboardSections } from '../../src/services/dashboard/sections.ts';

const NOW = new Date('2026-03-01T12:00:00.000Z');
const at = (ms: number) => new Date(NOW.getTime() + ms).toISOString();

for (const backend of backends()) {
  test(`the dashboard counts the project's own pending, live obligations and open executions (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const db = ts.store.db;
      for (const id of ['prj_mine', 'prj_other']) await db.insertInto('projects').values({ id, name: id, created_at: at(-1000) }).execute();
      await db.insertInto('policy_active').values({ project_id: 'prj_other', version: 3, hash: 'h', activated_at: at(-500), activated_by: 'usr_x' }).execute();
      const obligations: [string, string, string, number][] = [
        ['apr_live', 'prj_mine', 'pending', 60_000], ['apr_expired', 'prj_mine', 'pending', -1], ['apr_approved', 'prj_mine', 'approved', 60_000],
        ['apr_revoked', 'prj_mine', 'revoked', 60_000], ['apr_others', 'prj_other', 'pending', 60_000],
      ];
      for (const [id, project, status, expiresIn] of obligations) {
        await db.insertInto('approval_requests').values({
          id, project_id: project, decision_id: `dec_${id}`, agent: 'did:key:z', action: 'pay', resource: 'r', amount_minor: null, amount_currency: null, intent: null,
          permit_commitment: null, policy_version: 1, matched_rules: '[]', execution: null, requested_by: null, statement_version: 2, status, created_at: at(-1000), expires_at: at(expiresIn),
        }).execute();
      }
      const executions: [string, string][] = [['prj_mine', 'UNKNOWN'], ['prj_mine', 'IN_FLIGHT'], ['prj_mine', 'SUCCEEDED'], ['prj_mine', 'FAILED'], ['prj_other', 'UNKNOWN'], ['prj_other', 'IN_FLIGHT'], ['prj_other', 'IN_FLIGHT']];
      for (const [i, [project, status]] of executions.entries()) {
        await db.insertInto('executions').values({
          id: `exe_${i}`, project_id: project, nonce: `n-${i}`, fingerprint: 'f'.repeat(64), decision_id: `dec_${i}`, decision_audit_id: `aud_${i}`, policy_version: 1, agent: 'did:key:z',
          action: 'pay', resource: 'r', merchant: 'm', operation: 'o', status, note: null, http_status: null, instance_id: 'ins_x', created_at: at(-1000), completed_at: null,
          resolved_at: null, resolved_by: null, resolution_note: null,
        }).execute();
      }
      const mine = await dashboardSections(db, 'prj_mine', NOW);
      assert.deepEqual([mine.policy, mine.approvals, mine.executions], [{ active_version: null, activated_at: null }, { pending: 1 }, { unknown: 1, in_flight: 1 }]);
      const other = await dashboardSections(db, 'prj_other', NOW);
      assert.deepEqual([other.policy, other.approvals, other.executions], [{ active_version: 3, activated_at: at(-500) }, { pending: 1 }, { unknown: 1, in_flight: 2 }]);
      // An obligation is pending until the very instant it expires, and not at it.
      assert.equal((await dashboardSections(db, 'prj_mine', new Date(NOW.getTime() + 60_000))).approvals.pending, 0);
      assert.equal((await dashboardSections(db, 'prj_mine', new Date(NOW.getTime() + 59_999))).approvals.pending, 1);
      // The log's size is what was sequenced, whether a checkpoint covers it yet or not.
      assert.deepEqual([mine.audit_log.tree_size, mine.audit_log.latest_checkpoint], [0, null]);
      await db.insertInto('audit_log_state').values({ id: 1, origin: 'gavel.test/log', size: 7, root: new Uint8Array(32), updated_at: at(-10) }).execute();
      const grown = await dashboardSections(db, 'prj_mine', NOW);
      assert.deepEqual([grown.audit_log.tree_size, grown.audit_log.latest_checkpoint, grown.audit_log.witnessed_size], [7, null, null]);
      // A newer checkpoint than the witnessed one shows as not witnessed yet, beside the witnessed size.
      const checkpoint = (size: number, witnessedAt: string | null) => ({ size, root: new Uint8Array(32), note: `note ${size}`, created_at: at(-100 + size), cosignatures: witnessedAt && '— w x\n', witnessed_at: witnessedAt });
      await db.insertInto('audit_checkpoints').values([checkpoint(3, at(-50)), checkpoint(7, null)]).execute();
      const pending = (await dashboardSections(db, 'prj_mine', NOW)).audit_log;
      assert.deepEqual([pending.latest_checkpoint, pending.witnessed_size], [{ size: 7, created_at: at(-93), witnessed_at: null }, 3]);
    } finally { await ts.cleanup(); }
  });
}
