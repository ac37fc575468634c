// An approval covers the merchant call its obligation states (decision 0503): the merchant, the
// operation and the payload the opening request carried, which the statement shows the approver.
// Another payload, operation or merchant, or a call where the obligation stated none, is not covered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { approvedCallsFixture } from '../support/approvals.ts';

for (const backend of backends()) {
  test(`an approval covers only the merchant call it states (${backend.name})`, async () => {
    const { svc, merchant, req, authorize, obligation, approve, stop } = await approvedCallsFixture(backend);
    try {
      const call = { merchant: 'shop', operation: 'ok', payload: { to: 'DE89 3704', amount: 50_000 } };

      const opened = await authorize({ ...req, execution: { ...call, nonce: randomUUID() } });
      assert.equal(opened.decision, 'REQUIRE_APPROVAL');
      const id = opened.approval_request_id as string;
      const o = await obligation(id);
      assert.deepEqual(o.execution, call, 'the obligation states the call');
      assert.deepEqual(JSON.parse(o.statement).execution, call, 'and so does the statement the approver signs');
      await approve(id);

      for (const [what, execution] of [
        ['another payload', { ...call, payload: { to: 'attacker', amount: 50_000 } }],
        ['another operation', { ...call, operation: 'refuse' }],
        ['another merchant', { ...call, merchant: 'other' }],
      ] as const) {
        const res = await authorize({ ...req, approval_request_id: id, execution: { ...execution, nonce: randomUUID() } });
        assert.equal(res.decision, 'REQUIRE_APPROVAL', what);
        assert.match(res.detail, /differs .* in execution/, what);
        assert.equal(res.execution, undefined, what);
      }
      const without = await authorize({ ...req, approval_request_id: id });
      assert.match(without.detail, /differs .* in execution/, 'an approved call is not a bare approval either');
      assert.equal((await obligation(id)).status, 'approved', 'nothing consumed it');
      assert.equal(merchant.calls.size, 0, 'no merchant was called');

      const nonce = randomUUID();
      const executed = await authorize({ ...req, approval_request_id: id, execution: { ...call, nonce } });
      assert.equal(executed.reason_code, 'approval_granted', JSON.stringify(executed));
      assert.equal(executed.execution.status, 'SUCCEEDED');
      assert.deepEqual(merchant.bodies.get(nonce), call.payload);
      // The audit log keeps what was sent, beside the call's fingerprint.
      const started = await svc.ts.store.db.selectFrom('audit_events').select('data').where('kind', '=', 'execution.started').execute();
      assert.deepEqual(started.map((e) => JSON.parse(e.data).payload), [call.payload]);

      // An obligation opened without a call is not discharged by one.
      const bare = await authorize(req);
      await approve(bare.approval_request_id);
      assert.equal((await obligation(bare.approval_request_id)).execution, null);
      const smuggled = await authorize({ ...req, approval_request_id: bare.approval_request_id, execution: { ...call, nonce: randomUUID() } });
      assert.match(smuggled.detail, /differs .* in execution/);
      assert.equal((await authorize({ ...req, approval_request_id: bare.approval_request_id })).reason_code, 'approval_granted');
    } finally {
      await stop();
    }
  });
}

for (const backend of backends()) {
  test(`repeats of an approved call racing its ALLOW are that call's repeats, not new obligations (${backend.name})`, async () => {
    const { svc, merchant, req, authorize, obligation, approve, stop } = await approvedCallsFixture(backend);
    try {
      const call = { merchant: 'shop', operation: 'slow', payload: { order: 'o-1' } };
      const opened = await authorize({ ...req, execution: { ...call, nonce: randomUUID() } });
      const id = opened.approval_request_id as string;
      await approve(id);
      const pending = async () => Number((await svc.ts.store.db.selectFrom('approval_requests').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow()).n);
      const before = await pending();
      // The same nonce, the same approval, 30 at once: one ALLOW consumes it and calls the merchant;
      // the others are its repeats (in progress, or REPLAY once it settled), never a REQUIRE_APPROVAL.
      const nonce = randomUUID();
      const all = await Promise.all(Array.from({ length: 30 }, () => authorize({ ...req, approval_request_id: id, execution: { ...call, nonce } })));
      const kinds = all.map((r) => r.decision ?? r.code);
      assert.equal(kinds.filter((k) => k === 'ALLOW').length, 1, kinds.join(' '));
      assert.deepEqual([...new Set(kinds.filter((k) => k !== 'ALLOW'))].filter((k) => k !== 'execution_in_progress' && k !== 'REPLAY'), [], kinds.join(' '));
      assert.equal(await pending(), before, 'no new obligation was opened');
      assert.equal(merchant.calls.get(nonce), 1, 'one merchant call');
      assert.equal((await obligation(id)).status, 'consumed');
    } finally {
      await stop();
    }
  });
}
