// A project with more members and keys than one SQL statement may bind (SQLite 32,766 variables,
// PostgreSQL 65,535): the console's views count them and removing a member revokes every key it
// minted, instead of a statement binding one value per row being refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { MORE_THAN_ONE_STATEMENT_BINDS as MANY, seedKeys, seedMembers } from '../support/bulk.ts';
import { newId } from '../../src/lib/ids.ts';

for (const backend of backends()) {
  test(`the control plane counts a project of ${MANY} members (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const auditor = await consoleMember(svc, ['AUDITOR']);
      const plane = async () => {
        const res = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/control-plane`, headers: auditor.get });
        assert.equal(res.statusCode, 200, res.body);
        return res.json();
      };
      const before = await plane();
      const members = await seedMembers(svc.ts.store, svc.projectId, MANY, ['APPROVER']);
      await seedKeys(svc.ts.store, svc.projectId, members.slice(0, 300), auditor.principalId);
      await seedKeys(svc.ts.store, svc.projectId, members.slice(300, 500), auditor.principalId, { revoked: true });
      // Sessions of bulk members: one live, one ended, one idle too long, one last used far ahead (the clock stepped back).
      const now = Date.now();
      const session = (principal_id: string, lastSeen: number, ended = false) => ({
        id: newId('ses'), token_hash: newId('ses'), principal_id, created_at: new Date(now - 60_000).toISOString(), last_seen_at: new Date(lastSeen).toISOString(),
        expires_at: new Date(now + 3600_000).toISOString(), ended_at: ended ? new Date(now).toISOString() : null, ended_reason: ended ? 'logout' : null,
      });
      await svc.ts.store.db.insertInto('sessions').values([
        session(members[0]!, now), session(members[1]!, now, true), session(members[2]!, now - 24 * 3600_000), session(members[3]!, now + 24 * 3600_000),
      ]).execute();

      const after = await plane();
      assert.equal(after.members, before.members + MANY);
      assert.deepEqual(after.role_holders, { ...before.role_holders, APPROVER: before.role_holders.APPROVER + MANY });
      assert.deepEqual(after.api_keys, { live: before.api_keys.live + 300, revoked: before.api_keys.revoked + 200 });
      assert.equal(after.live_sessions, before.live_sessions + 1);
    } finally { await svc.stop(); }
  });

  test(`removing an ADMIN who minted ${MANY} keys revokes them all (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const admin = await consoleMember(svc, ['ADMIN']);
      const minter = await consoleMember(svc, ['ADMIN']);
      const holders = await seedMembers(svc.ts.store, svc.projectId, MANY);
      const minted = await seedKeys(svc.ts.store, svc.projectId, holders, minter.principalId);
      const res = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/members/${minter.principalId}/revoke`, headers: admin.post, payload: {} });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().keys_revoked, MANY + 0);
      const live = await svc.ts.store.db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('created_by', '=', minter.principalId).where('revoked_at', 'is', null).executeTakeFirstOrThrow();
      assert.equal(Number(live.n), 0);
      assert.equal(minted.length, MANY);
    } finally { await svc.stop(); }
  });
}
