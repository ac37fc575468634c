// A revoke, or an authorize, that reads an approval as approved and then loses the row to the other
// (docs/approvals.md: both are conditional updates `where status = 'approved'`). Only PostgreSQL
// interleaves them: on SQLite writers take turns, so neither reads a state that changes under it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { holdRow } from '../support/hold-table.ts';
import { approvedCallsFixture, newApprover, seedObligation } from '../support/approvals.ts';

const postgres = backends().find((b) => b.name === 'postgres');

test('a revoke that loses the row to a consumption answers 409 approval_consumed and withdraws nothing', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(postgres!);
  try {
    const key = await svc.keyHeader([]);
    const approver = await newApprover(svc);
    const id = await seedObligation(svc);
    const base = `/v1/projects/${svc.projectId}/approvals`;
    const view = async () => (await svc.app.inject({ method: 'GET', url: `${base}?limit=500`, headers: key })).json().approvals.find((o: { id: string }) => o.id === id);
    const recorded = await svc.app.inject({ method: 'POST', url: base, headers: key, payload: { approval_request_id: id, key_id: approver.keyId, signature: approver.sign((await view()).statement) } });
    assert.equal(recorded.statusCode, 201, recorded.body);

    const held = await holdRow(process.env.GAVEL_TEST_DATABASE_URL!, (svc.ts.options as { schema: string }).schema, 'approval_requests', id);
    const revoke = svc.app.inject({ method: 'POST', url: `${base}/revoke`, headers: key, payload: { approval_request_id: id } });
    // The revoke has read the approval as approved and waits to withdraw it; a consumption commits first.
    await held.reached('update "approval_requests"%');
    await held.commit(`update approval_requests set status = 'consumed' where id = $1`, [id]);
    const res = await revoke;
    assert.equal(res.statusCode, 409, res.body);
    assert.equal(res.json().code, 'approval_consumed');
    const after = await view();
    assert.deepEqual([after.status, after.approval.revoked_at], ['consumed', null]);
    assert.equal((await svc.ts.store.db.selectFrom('audit_events').select('id').where('kind', '=', 'approval.revoked').execute()).length, 0);
  } finally {
    await svc.stop();
  }
});

test('an authorize that loses the row to a revoke asks again, with a new obligation, and says why', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const { svc, req, authorize, obligation, approve, stop } = await approvedCallsFixture(postgres!);
  try {
    const id = (await authorize(req)).approval_request_id as string;
    await approve(id);
    const held = await holdRow(process.env.GAVEL_TEST_DATABASE_URL!, (svc.ts.options as { schema: string }).schema, 'approval_requests', id);
    const pending = authorize({ ...req, approval_request_id: id });
    // The decision has found the approval usable and waits to consume it; a revoke commits first.
    await held.reached('update "approval_requests"%');
    await held.commit(`update approval_requests set status = 'withdrawn' where id = $1`, [id]);
    const res = await pending;
    assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
    assert.notEqual(res.approval_request_id, id);
    assert.match(res.detail, /^approval_not_satisfied: the approval was consumed or revoked by a concurrent request/);
    const after = await obligation(id);
    assert.deepEqual([after.status, after.approval.consumed_at], ['withdrawn', null]);
  } finally {
    await stop();
  }
});
