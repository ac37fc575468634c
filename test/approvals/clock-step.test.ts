// An obligation's `expires_at` is an instant the approver signed (its statement names it), not a
// lifetime counted from the clock as it stands: after the wall clock steps back, an approval
// recorded before the step still discharges its obligation until the clock reaches that instant, and
// one the clock has passed, by a step forward, discharges nothing and cannot be approved
// (docs/architecture.md, "The wall clock stepping", approvals). Both engines; the service's clock is stepped.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, decide, issue, newAgent } from '../support/authorize.ts';
import { newApprover, type Approver } from '../support/approvals.ts';
import { APPROVAL_REQUEST_TTL_MS } from '../../src/services/authorize/commit.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };
const LARGE = { minor: 50_000, currency: 'EUR' };
const HOUR_MS = 3600_000;

for (const backend of backends()) {
  describe(`an approval across a step of the wall clock, on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    let approver: Approver;
    let step = 0;
    const at = (ms: number) => { step = ms; };
    const approvals = () => `/v1/projects/${svc.projectId}/approvals`;

    async function approvedObligation() {
      const agent = newAgent();
      // Valid on either side of every step made here: only the approval's own time is under test.
      const { jws } = await issue(svc, agent.did, PAY, { ttlSeconds: 3 * 24 * 3600, notBefore: new Date(Date.now() - 3 * HOUR_MS) });
      const req = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: LARGE };
      const opened = await decide(svc, key, req);
      assert.equal(opened.decision, 'REQUIRE_APPROVAL', JSON.stringify(opened));
      const id = (opened as unknown as { approval_request_id: string }).approval_request_id;
      const listed = (await svc.app.inject({ method: 'GET', url: `${approvals()}?limit=500`, headers: key })).json().approvals.find((o: { id: string }) => o.id === id);
      return { req, id, statement: listed.statement as string, expiresAt: Date.parse(listed.expires_at) };
    }
    const record = (id: string, statement: string) => svc.app.inject({ method: 'POST', url: approvals(), headers: key,
      payload: { approval_request_id: id, key_id: approver.keyId, signature: approver.sign(statement) } });

    before(async () => {
      svc = await startService(backend, {}, undefined, { clock: { now: () => new Date(Date.now() + step) } });
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      approver = await newApprover(svc);
    });
    after(async () => { at(0); await svc.stop(); });

    test('approved before the clock steps back, it still discharges its obligation: the instant signed stands', async () => {
      at(0);
      const { req, id, statement, expiresAt } = await approvedObligation();
      assert.ok(statement.includes(new Date(expiresAt).toISOString()), 'the statement the approver signs names the instant');
      assert.equal((await record(id, statement)).statusCode, 201);
      at(-2 * HOUR_MS);
      const granted = await decide(svc, key, { ...req, approval_request_id: id });
      assert.deepEqual([granted.decision, granted.reason_code], ['ALLOW', 'approval_granted'], JSON.stringify(granted));
    });

    test('a step forward past the instant signed ends it: it discharges nothing, and a pending one cannot be approved', async () => {
      at(0);
      const approved = await approvedObligation();
      assert.equal((await record(approved.id, approved.statement)).statusCode, 201);
      const pending = await approvedObligation();
      at(APPROVAL_REQUEST_TTL_MS + HOUR_MS);
      const late = await decide(svc, key, { ...approved.req, approval_request_id: approved.id });
      assert.equal(late.decision, 'REQUIRE_APPROVAL', JSON.stringify(late));
      assert.match(late.detail ?? '', new RegExp(`approval request ${approved.id} is expired`));
      const refused = await record(pending.id, pending.statement);
      assert.deepEqual([refused.statusCode, refused.json().code], [409, 'approval_request_expired']);
    });
  });
}
