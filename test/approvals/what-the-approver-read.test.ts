// An approval covers what its statement told the approver, and a statement shows the approver what
// is sent (approver-deception audit, session 53):
// - the rules that asked for a person: under the same policy version another permit (its commitment,
//   its depth) or another time can ask for a reason the approver never read, and the approval given
//   for the first reason satisfied it (decision 0505, addendum);
// - the call's payload: RFC 8785 keeps format characters, line separators, DEL and the C1 controls as
//   they are, so `{"to": "\u202e4321-98ED"}` read as another account than the one paid (the rule
//   intent already followed, decision 0500).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { approvedCallsFixture, newApprover, type Approver } from '../support/approvals.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };
const LARGE = { minor: 50_000, currency: 'EUR' };

for (const backend of backends()) {
  describe(`an approval covers the rules its statement names (${backend.name})`, () => {
    let svc: TestService;
    let key: { authorization: string };
    let approver: Approver;
    const base = () => `/v1/projects/${svc.projectId}/approvals`;
    const authorize = async (body: Record<string, unknown>) => (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body })).json();
    const obligation = async (id: string) => (await svc.app.inject({ method: 'GET', url: `${base()}?limit=500`, headers: key })).json().approvals.find((o: { id: string }) => o.id === id);
    before(async () => { svc = await startService(backend); key = await svc.keyHeader([]); approver = await newApprover(svc); });
    after(async () => { await svc.stop(); });

    test('a request the same version sends to a person for another rule is not discharged by it; the same request is', async () => {
      const agent = newAgent();
      const clean = await issue(svc, agent.did, PAY);
      const flagged = await issue(svc, agent.did, PAY);
      await activatePolicy(svc, { ...ALLOW_PAYMENTS, rules: [...ALLOW_PAYMENTS.rules,
        { id: 'permit-under-review-needs-person', effect: 'REQUIRE_APPROVAL', when: { op: 'eq', input: 'root_permit_commitment', value: flagged.commitment } }] });
      const req = { agent: agent.did, action: 'pay', resource: 'resource://shop/1', amount: LARGE };
      const opened = await authorize({ ...req, permit: clean.jws });
      assert.equal(opened.decision, 'REQUIRE_APPROVAL');
      const id = opened.approval_request_id as string;
      const o = await obligation(id);
      assert.deepEqual(JSON.parse(o.statement).matched_rules, ['pay-large-needs-person'], 'what the approver reads and signs');
      const recorded = await svc.app.inject({ method: 'POST', url: base(), headers: key, payload: { approval_request_id: id, key_id: approver.keyId, signature: approver.sign(o.statement) } });
      assert.equal(recorded.statusCode, 201, recorded.body);
      // Under the flagged permit, two rules ask: the approval read one.
      const other = await authorize({ ...req, permit: flagged.jws, approval_request_id: id });
      assert.equal(other.decision, 'REQUIRE_APPROVAL', JSON.stringify(other));
      assert.match(other.detail, new RegExp(`differs from approval request ${id} in matched_rules`));
      assert.notEqual(other.approval_request_id, id, 'a new obligation states the new reason');
      assert.equal((await obligation(id)).status, 'approved', 'nothing was consumed');
      // The request it was given for is discharged by it.
      const same = await authorize({ ...req, permit: clean.jws, approval_request_id: id });
      assert.equal(same.decision, 'ALLOW', JSON.stringify(same));
      assert.equal(same.reason_code, 'approval_granted');
      assert.equal((await obligation(id)).status, 'consumed');
    });
  });

  test(`a payload that would show the approver other text than it sends is refused, nothing decided (${backend.name})`, async () => {
    const { merchant, req, authorize, stop } = await approvedCallsFixture(backend);
    try {
      for (const [payload, pointer] of [
        [{ to: '\u202e4321-98ED' }, '/execution/payload/to'],
        [{ to: 'DE89\u200b3704' }, '/execution/payload/to'],
        [{ ['to\u2066']: 'x' }, '/execution/payload/to\u2066'],
        [{ to: 'a\u0085b' }, '/execution/payload/to'],
        [{ lines: ['ok', 'a\u2028b'] }, '/execution/payload/lines/1'],
        [{ to: 'x\u007f' }, '/execution/payload/to'],
      ] as const) {
        const res = await authorize({ ...req, execution: { merchant: 'shop', operation: 'ok', payload, nonce: randomUUID() } });
        assert.equal(res.code, 'invalid_request', `${JSON.stringify(payload)}: ${JSON.stringify(res)}`);
        assert.deepEqual(res.errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]), [[pointer, 'bad_format']], JSON.stringify(payload));
      }
      // What writing needs still passes: the joiners, accents, other scripts; a line break is escaped where a person reads it.
      const fine = await authorize({ ...req, execution: { merchant: 'shop', operation: 'ok', payload: { to: 'Zoë 👩\u200d💻 \u0646\u200c\u0645', memo: 'a\nb' }, nonce: randomUUID() } });
      assert.notEqual(fine.code, 'invalid_request', JSON.stringify(fine));
      assert.equal(merchant.calls.size, 0);
    } finally { await stop(); }
  });
}
