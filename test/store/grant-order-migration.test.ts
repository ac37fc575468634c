// Migration 0911: a key counted its holder's grants stamped no later than itself; now those numbered
// up to its grants_upto; so for an approval and its approver's APPROVER grant. Numbering the stored
// rows keeps what each key and approval counted (a stamp equal to theirs counts), and a grant made
// after the migration reaches none of those made before it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { numberByStamps } from '../../src/store/migrations/0911_grant_order.ts';
import { authenticateApiKey, hashSecret } from '../../src/http/auth/api-key.ts';
import { listApiKeys, mintApiKey } from '../../src/services/identity/api-keys.ts';
import { grantRole, revokeRole } from '../../src/services/identity/members.ts';
import { approverEligibility } from '../../src/services/approvals/eligibility.ts';

const T = (minute: number) => `2026-01-01T00:${String(minute).padStart(2, '0')}:00.000Z`;

for (const backend of backends()) {
  test(`migration 0911 numbers stored grants and keys so that each key counts what it counted by stamps (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const { db } = ts.store;
      const projectId = 'prj_m', holder = 'prn_m';
      await db.insertInto('projects').values({ id: projectId, name: 'p', created_at: T(0) }).execute();
      await db.insertInto('principals').values({ id: holder, kind: 'service', name: 'm', password_hash: null, created_at: T(0), disabled_at: null }).execute();
      await db.insertInto('memberships').values({ project_id: projectId, principal_id: holder, created_at: T(0), created_by: null, revoked_at: null }).execute();
      // AUDITOR held since 10; APPROVER granted again at 30, after the key of 20 was minted.
      await db.insertInto('role_grants').values([
        { project_id: projectId, principal_id: holder, role: 'AUDITOR', granted_at: T(10), granted_by: null },
        { project_id: projectId, principal_id: holder, role: 'APPROVER', granted_at: T(30), granted_by: null },
      ]).execute();
      const keys = { before: T(5), between: T(20), same: T(30), after: T(40) };
      for (const [name, created_at] of Object.entries(keys)) {
        await db.insertInto('api_keys').values({ id: `key_${name}`, project_id: projectId, principal_id: holder, name, secret_hash: hashSecret(name),
          roles: JSON.stringify(['APPROVER', 'AUDITOR']), created_at, created_by: 'test', revoked_at: null, revoked_by: null }).execute();
      }
      await db.insertInto('approval_keys').values({ id: 'apk_m', project_id: projectId, principal_id: holder, public_key: 'pk', name: null, created_at: T(0), created_by: 'test', retired_at: null, retired_by: null }).execute();
      for (const [name, created_at] of Object.entries(keys)) {
        await db.insertInto('approvals').values({ id: `apv_${name}`, project_id: projectId, approval_request_id: `apr_${name}`, key_id: 'apk_m', principal_id: holder,
          signature: 's', recorded_by: 'test', created_at, revoked_at: null, revoked_by: null, revoke_reason: null, consumed_at: null, consumed_by_decision: null, grants_upto: 0 }).execute();
      }
      await numberByStamps(db);
      const usable = async () => Object.fromEntries(await Promise.all(Object.keys(keys).map(async (name) => {
        const { grants_upto } = await db.selectFrom('approvals').select('grants_upto').where('id', '=', `apv_${name}`).executeTakeFirstOrThrow();
        return [name, (await approverEligibility(db, projectId, 'apk_m', grants_upto)).ok];
      })));
      assert.deepEqual(await usable(), { before: false, between: false, same: true, after: true }, 'usable while APPROVER was held since before it');
      const effective = async () => Object.fromEntries((await listApiKeys(db, projectId, { limit: 10 })).map((k) => [k.name, k.effective_roles]));
      assert.deepEqual(await effective(), { before: [], between: ['AUDITOR'], same: ['APPROVER', 'AUDITOR'], after: ['APPROVER', 'AUDITOR'] });
      const input = { projectId, principalId: holder, role: 'AUDITOR' as const, actor: 'test' };
      await revokeRole(ts.store, input, new Date(T(50)));
      // Stamped before every key, as an instance whose clock runs behind would: reaches none of them.
      await grantRole(ts.store, input, new Date(T(1)));
      assert.deepEqual(await effective(), { before: [], between: [], same: ['APPROVER'], after: ['APPROVER'] });
      await revokeRole(ts.store, { ...input, role: 'APPROVER' }, new Date(T(50)));
      await grantRole(ts.store, { ...input, role: 'APPROVER' }, new Date(T(1)));
      assert.deepEqual(await usable(), { before: false, between: false, same: false, after: false }, 'APPROVER granted again revives none');
      const fresh = await ts.store.transaction((trx) => mintApiKey(trx, { projectId, principalId: holder, name: 'fresh', roles: ['AUDITOR'], actor: 'test', at: new Date(T(0)) }));
      const auth = await authenticateApiKey(ts.store, `Bearer ${fresh.secret}`);
      assert.deepEqual([...auth.roles], ['AUDITOR'], 'a key minted after the grant carries it, though stamped before it');
    } finally { await ts.cleanup(); }
  });
}
