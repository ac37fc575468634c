// The console dashboard says what needs a person and whether the audit log is witnessed: a witness
// that refuses the log's checkpoints shows there until it cosigns again, not only in the log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { activatePolicy, ALLOW_PAYMENTS, decide, issue, newAgent } from '../support/authorize.ts';
import { addEvents, startAuditService } from './support.ts';

for (const backend of backends()) {
  test(`the dashboard shows the active policy, pending obligations, and the witness's refusal (${backend.name})`, async () => {
    const refusing = await startAuditService(backend, 'foreign');
    try {
      const { svc } = refusing;
      const member = await consoleMember(svc, ['AUDITOR']);
      const dashboard = async () => {
        const res = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/dashboard`, headers: member.get });
        assert.equal(res.statusCode, 200, res.body);
        return res.json();
      };
      const before = await dashboard();
      assert.deepEqual([before.policy, before.approvals, before.executions], [{ active_version: null, activated_at: null }, { pending: 0 }, { unknown: 0, in_flight: 0 }]);
      const version = await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const asked = await decide(svc, await svc.keyHeader([]), { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' } });
      assert.equal(asked.decision, 'REQUIRE_APPROVAL');
      // Executions waiting on a person, and on a merchant: one UNKNOWN, two IN_FLIGHT. The service's own
      // calls: of an instance that does not beat, its keeper marks them UNKNOWN once it judges others.
      const at = new Date().toISOString();
      for (const [i, status] of (['UNKNOWN', 'IN_FLIGHT', 'IN_FLIGHT'] as const).entries()) {
        await svc.ts.store.db.insertInto('executions').values({
          id: `exe_dash${i}`, project_id: svc.projectId, nonce: `dash-${i}`, fingerprint: 'f'.repeat(64), decision_id: `dec_dash${i}`, decision_audit_id: `aud_dash${i}`,
          policy_version: version, agent: agent.did, action: 'pay', resource: 'resource://shop/1', merchant: 'm', operation: 'o', status, note: null, http_status: null,
          instance_id: svc.deps.executions.instanceId, created_at: at, completed_at: null, resolved_at: null, resolved_by: null, resolution_note: null,
        }).execute();
      }
      await addEvents(svc.ts.store, svc.projectId, 2);
      const tick = await svc.auditLog.tick({ force: true });
      assert.equal(tick.witness?.kind, 'refused', JSON.stringify(tick.witness));
      const after = await dashboard();
      assert.equal(after.policy.active_version, version);
      assert.equal(after.approvals.pending, 1);
      assert.deepEqual(after.executions, { unknown: 1, in_flight: 2 });
      // Every event of this project was written within the last 24 hours (read as a range of ids: audit/window.ts).
      const events = await svc.ts.store.db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number>().as('n')).where('project_id', '=', svc.projectId).executeTakeFirstOrThrow();
      assert.equal(after.recent_audit_events, Number(events.n));
      assert.ok(after.recent_audit_events > before.recent_audit_events);
      assert.ok(after.audit_log.tree_size > before.audit_log.tree_size, JSON.stringify(after.audit_log));
      assert.equal(after.audit_log.latest_checkpoint.size, after.audit_log.tree_size);
      assert.equal(after.audit_log.latest_checkpoint.witnessed_at, null);
      assert.equal(after.audit_log.witnessed_size, null);
      assert.equal(after.audit_log.witness_problem.kind, 'refused');
      assert.match(after.audit_log.witness_problem.at, /Z$/);
      // A proof waits on that witness: the answer says why, and to come back later than in a second.
      const [event] = await addEvents(svc.ts.store, svc.projectId, 1);
      await svc.auditLog.tick({ force: true });
      const proof = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/audit/${event}/proof`, headers: await svc.keyHeader([]) });
      assert.equal(proof.statusCode, 409, proof.body);
      assert.match(proof.json().detail, /the witness has not cosigned since .*Z \(refused/);
      assert.equal(proof.headers['retry-after'], '30');
      assert.equal(proof.json().retry_after_seconds, 30);
    } finally { await refusing.stop(); }

    // A problem recorded earlier (by whichever instance led then) shows until the witness cosigns
    // again; then nothing is reported, and the witnessed size is the log's.
    const cosigning = await startAuditService(backend, 'own');
    try {
      const { svc } = cosigning;
      const member = await consoleMember(svc, ['AUDITOR']);
      const shown = async () => (await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/dashboard`, headers: member.get })).json();
      // After whatever the start cosigned, a refusal is recorded (as another instance, leading, would).
      await new Promise((r) => setTimeout(r, 5));
      const problem = { kind: 'unavailable', reason: 'connect ECONNREFUSED', at: new Date().toISOString() };
      await svc.ts.store.db.insertInto('audit_witness_problem').values({ id: 1, ...problem }).onConflict((oc) => oc.column('id').doUpdateSet(problem)).execute();
      assert.deepEqual((await shown()).audit_log.witness_problem, problem, 'shown while nothing was cosigned after it');
      await addEvents(svc.ts.store, svc.projectId, 2);
      assert.equal((await svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      const cleared = await shown();
      assert.equal(cleared.audit_log.witness_problem, null, 'a later cosignature clears it');
      assert.equal(cleared.audit_log.witnessed_size, cleared.audit_log.latest_checkpoint.size);
    } finally { await cosigning.stop(); }
  });
}
