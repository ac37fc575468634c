// A REPLAY never consumes an approval (issue 7): the nonce is answered from the stored execution
// before any decision is taken, so an approved obligation named by the repeat stays approved.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { approvedCallsFixture } from '../support/approvals.ts';

for (const backend of backends()) {
  test(`a REPLAY never consumes an approval (${backend.name})`, async () => {
    const { merchant, req, authorize, obligation: statusOf, approve, stop } = await approvedCallsFixture(backend);
    try {
      const execution = (nonce: string) => ({ merchant: 'shop', operation: 'ok', payload: { order: 1 }, nonce });

      // The obligation states the call (decision 0503), so the request that opens it carries it too.
      const nonce = randomUUID();
      const first = await authorize({ ...req, execution: execution(nonce) });
      assert.equal(first.decision, 'REQUIRE_APPROVAL');
      await approve(first.approval_request_id);
      const executed = await authorize({ ...req, approval_request_id: first.approval_request_id, execution: execution(nonce) });
      assert.equal(executed.decision, 'ALLOW', JSON.stringify(executed));
      assert.equal(executed.execution.status, 'SUCCEEDED');
      assert.equal((await statusOf(first.approval_request_id)).status, 'consumed');

      // A second obligation, approved, then named by a repeat of the executed request.
      const second = await authorize({ ...req, execution: execution(randomUUID()) });
      await approve(second.approval_request_id);
      const replay = await authorize({ ...req, approval_request_id: second.approval_request_id, execution: execution(nonce) });
      assert.equal(replay.decision, 'REPLAY');
      assert.equal(replay.execution.id, executed.execution.id);
      assert.equal((await statusOf(second.approval_request_id)).status, 'approved', 'the replay consumed nothing');
      assert.equal(merchant.calls.get(nonce), 1);

      // The approval is still good for a new action.
      const fresh = await authorize({ ...req, approval_request_id: second.approval_request_id, execution: execution(randomUUID()) });
      assert.equal(fresh.decision, 'ALLOW');
      assert.equal((await statusOf(second.approval_request_id)).status, 'consumed');
    } finally {
      await stop();
    }
  });
}
