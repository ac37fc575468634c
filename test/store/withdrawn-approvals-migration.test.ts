// Migration 0906: obligations revoked before it were stored as `revoked`; the spec's name for that
// state is `withdrawn` (section 3), and the other statuses are left as they were.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { up } from '../../src/store/migrations/0906_withdrawn_approvals.ts';

for (const backend of backends()) {
  test(`migration 0906 renames revoked obligations withdrawn (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const { db } = ts.store;
      for (const [id, status] of [['apr_1', 'revoked'], ['apr_2', 'approved'], ['apr_3', 'consumed'], ['apr_4', 'pending'], ['apr_5', 'revoked']]) {
        await sql`insert into approval_requests (id, project_id, decision_id, agent, action, resource, policy_version, matched_rules, status, created_at, expires_at)
          values (${id}, 'prj_x', 'dec_x', 'did:example:a', 'pay', 'resource://r', 1, '[]', ${status}, '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z')`.execute(db);
      }
      await up(db);
      const rows = await sql<{ id: string; status: string }>`select id, status from approval_requests order by id`.execute(db);
      assert.deepEqual(rows.rows.map((r) => `${r.id} ${r.status}`), ['apr_1 withdrawn', 'apr_2 approved', 'apr_3 consumed', 'apr_4 pending', 'apr_5 withdrawn']);
    } finally { await ts.cleanup(); }
  });
}
