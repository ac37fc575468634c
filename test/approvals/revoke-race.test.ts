// A revoke, or an authorize, that reads an approval as approved and then loses the row to the other
// (docs/approvals.md: both are conditional updates `where status = 'approved'`). Only PostgreSQL
// interleaves them: on SQLite writers take turns, so neither reads a state that changes under it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { holdRow, holdTable } from '../support/hold-table.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { retireApprovalKey } from '../../src/services/approvals/keys.ts';
import { revokeMember, revokeRole } from '../../src/services/identity/members.ts';
import { approvedCallsFixture, newApprover, seedObligation, type Approver } from '../support/approvals.ts';

const postgres = backends().find((b) => b.name === 'postgres');
const schemaOf = (svc: TestService) => (svc.ts.options as { schema: string }).schema;
/** Holds a table or a row of this service's schema from a connection of its own (support/hold-table.ts). */
const hold = {
  table: (svc: TestService, table: string, mode: 'access exclusive' | 'exclusive') => holdTable(process.env.GAVEL_TEST_DATABASE_URL!, schemaOf(svc), table, mode),
  row: (svc: TestService, table: string, id: string) => holdRow(process.env.GAVEL_TEST_DATABASE_URL!, schemaOf(svc), table, id),
};
/** A project with the payments policy active, an approver and an authorize call with an API key. */
async function withApprover(svc: TestService) {
  const key = await svc.keyHeader([]);
  await activatePolicy(svc, ALLOW_PAYMENTS);
  const approver = await newApprover(svc);
  return { key, approver, authorize: authorizer(svc, key) };
}

test('a revoke that loses the row to a consumption answers 409 approval_consumed and withdraws nothing', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(postgres!);
  try {
    const key = await svc.keyHeader([]);
    const approver = await newApprover(svc);
    const id = await seedObligation(svc);
    const base = `/v1/projects/${svc.projectId}/approvals`;
    const view = () => listed(svc, key, id);
    const recorded = await svc.app.inject({ method: 'POST', url: base, headers: key, payload: { approval_request_id: id, key_id: approver.keyId, signature: approver.sign((await view()).statement) } });
    assert.equal(recorded.statusCode, 201, recorded.body);

    const held = await hold.row(svc, 'approval_requests', id);
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
    const held = await hold.row(svc, 'approval_requests', id);
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

// Retiring the key, revoking the role or removing the member withdraws unused approvals (docs/approvals.md), like a permit
// revocation (decision 0011, session-36 addendum): once it has answered, no decision that read the
// approval as usable commits an ALLOW. Here the decision waits on its budget after reading it.
const WITHDRAWALS = [
  ['retiring the approval key', (svc: TestService, who: Approver) =>
    retireApprovalKey(svc.deps.store, { projectId: svc.projectId, keyId: who.keyId, actor: 'system', heldAdmin: true }, new Date()), 'update "approval_keys"%'],
  ['revoking the approver\'s role', (svc: TestService, who: Approver) =>
    revokeRole(svc.deps.store, { projectId: svc.projectId, principalId: who.principalId, role: 'APPROVER', actor: 'system' }, new Date()), 'delete from "role_grants"%'],
  ['removing the approver from the project', (svc: TestService, who: Approver) =>
    revokeMember(svc.deps.store, { projectId: svc.projectId, principalId: who.principalId, actor: 'system' }, new Date()), 'update "memberships"%'],
] as const;
for (const [what, withdraw, withdrawing] of WITHDRAWALS) {
  test(`${what} while a decision consumes its approval: it answers after that ALLOW, never before`, { skip: !postgres && 'PostgreSQL not configured' }, async () => {
    const svc = await startService(postgres!);
    try {
      const { key, approver, authorize } = await withApprover(svc);
      const { req, id } = await approvedPayment(svc, key, approver);

      // The decision reads the approval as usable, consumes it, then waits to spend the budget.
      const held = await hold.table(svc, 'permit_usage', 'exclusive');
      const order: string[] = [];
      const decided = authorize({ ...req, approval_request_id: id }).then((r) => { order.push(`${r.decision} ${r.reason_code}`); });
      await held.reached('insert into "permit_usage"%');
      const withdrawn = withdraw(svc, approver).then(() => { order.push('withdrawn'); });
      // It waits for the decision (or, unfixed, answers at once).
      // Checked while the decision is still held: once released, both may finish before the next line.
      try {
        await held.reached(withdrawing, { unless: withdrawn });
        assert.deepEqual(order, [], `${what} answered while a decision that read the approval as usable was in flight`);
      } finally { await held.release(); }
      await Promise.all([decided, withdrawn]);
      // Once released, the two commit in that order, but their answers may reach this process in
      // either (a loaded CI machine saw the withdrawal's first): "never before" is the check above.
      assert.deepEqual([...order].sort(), ['ALLOW approval_granted', 'withdrawn']);
    } finally {
      await svc.stop();
    }
  });
}

// Recording an approval reads the same rows: a withdrawal that answers before the recording would
// leave a 201 saying "approved" for an approval already lapsed. So the recording holds them FOR SHARE
// too (PostgreSQL): the withdrawal either commits first (the recording is refused) or waits for it.
for (const [what, withdraw, withdrawing] of WITHDRAWALS) {
  test(`${what} while an approval by that approver is being recorded: it answers after the 201, never before`, { skip: !postgres && 'PostgreSQL not configured' }, async () => {
    const svc = await startService(postgres!);
    try {
      const key = await svc.keyHeader([]);
      const approver = await newApprover(svc);
      const id = await seedObligation(svc);
      const base = `/v1/projects/${svc.projectId}/approvals`;
      const { statement } = await listed(svc, key, id);
      // The recording has checked the approver and waits to mark the obligation approved.
      const held = await hold.row(svc, 'approval_requests', id);
      const order: string[] = [];
      const recorded = svc.app.inject({ method: 'POST', url: base, headers: key, payload: { approval_request_id: id, key_id: approver.keyId, signature: approver.sign(statement) } })
        .then((r) => { order.push(`${r.statusCode} ${r.json().status}`); });
      await held.reached('update "approval_requests"%');
      const withdrawn = withdraw(svc, approver).then(() => { order.push('withdrawn'); });
      try {
        await held.reached(withdrawing, { unless: withdrawn });
        assert.deepEqual(order, [], `${what} answered while an approval by that approver was being recorded`);
      } finally { await held.release(); }
      await Promise.all([recorded, withdrawn]);
      // Released, both answer, in either order as they reach this process (the check above is "never before").
      assert.deepEqual([...order].sort(), ['201 approved', 'withdrawn']);
      assert.equal((await listed(svc, key, id)).status, 'lapsed');
    } finally {
      await svc.stop();
    }
  });
}

// Consumption holds the approver's key, membership (with its principal) and grant FOR SHARE, in that
// order; a removal writes the membership, then the grants; a retirement the key alone. No cycle: a
// removal queued behind one consumption, with a second consumption of the same approver's approval
// arriving behind it (its share lock joins the first), waits for both, and neither deadlocks (40P01)
// nor fails; an approval consumed after the removal committed is lapsed.
test('a member removal queued between two consumptions of one approver\'s approvals waits for both, without a deadlock', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(postgres!);
  try {
    const { key, approver, authorize } = await withApprover(svc);
    const approved = async () => { const { req, id } = await approvedPayment(svc, key, approver); return { ...req, approval_request_id: id }; };
    const [first, second, third] = [await approved(), await approved(), await approved()];
    const held = await hold.table(svc, 'permit_usage', 'exclusive');
    const order: string[] = [];
    const decide = (req: Record<string, unknown>, name: string) => authorize(req).then((r) => { order.push(`${name} ${r.decision} ${r.reason_code}`); return r; });
    const one = decide(first, 'first');
    await held.reached('insert into "permit_usage"%');
    const removed = revokeMember(svc.deps.store, { projectId: svc.projectId, principalId: approver.principalId, actor: 'system' }, new Date()).then(() => { order.push('removed'); });
    await held.reached('update "memberships"%', { unless: removed });
    const two = decide(second, 'second');
    await held.reached('insert into "permit_usage"%', { statements: 2, unless: removed }).finally(() => held.release());
    await Promise.all([one, two, removed]);
    assert.deepEqual(order.slice(0, 2).sort(), ['first ALLOW approval_granted', 'second ALLOW approval_granted']);
    assert.equal(order[2], 'removed');
    const late = await authorize(third);
    assert.equal(late.decision, 'REQUIRE_APPROVAL');
    assert.match(late.detail, /is lapsed: the owner of approval key .* is no longer a member/);
  } finally {
    await svc.stop();
  }
});

/** A payment the policy sends to approval, its obligation approved by `approver`: `req` re-sent with `id` consumes it. */
async function approvedPayment(svc: TestService, key: { authorization: string }, approver: Approver) {
  const agent = newAgent();
  const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 100_000, currency: 'EUR' } });
  const req = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' } };
  const base = `/v1/projects/${svc.projectId}/approvals`;
  const id = (await authorizer(svc, key)(req)).approval_request_id as string;
  const recorded = await svc.app.inject({ method: 'POST', url: base, headers: key, payload: { approval_request_id: id, key_id: approver.keyId, signature: approver.sign((await listed(svc, key, id)).statement) } });
  assert.equal(recorded.statusCode, 201, recorded.body);
  return { req, id };
}

const authorizer = (svc: TestService, key: { authorization: string }) => async (body: Record<string, unknown>) =>
  (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body })).json();

/** Obligation `id` as the machine list shows it. */
const listed = async (svc: TestService, key: { authorization: string }, id: string) =>
  (await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/approvals?limit=500`, headers: key })).json().approvals.find((o: { id: string }) => o.id === id);
