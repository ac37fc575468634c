// The obligations list and its filters (docs/approvals.md, "Statuses and transitions"): a filter by
// status lists exactly the obligations that read as that status, expiry included, at the very
// instant an obligation expires too; a filter by agent lists that agent's alone.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { newApprover, seedObligation, type Approver } from '../support/approvals.ts';
import { APPROVAL_STATUSES, type ApprovalStatus } from '../../src/domain/approval/index.ts';
import { listObligations } from '../../src/services/approvals/approvals.ts';
import { retireApprovalKey } from '../../src/services/approvals/keys.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };
const LARGE = { minor: 50_000, currency: 'EUR' };

for (const backend of backends()) {
  describe(`obligation listing on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    let approver: Approver;
    const base = () => `/v1/projects/${svc.projectId}/approvals`;
    const authorize = async (body: Record<string, unknown>) => (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body })).json();
    const listed = async (query: string) => {
      const res = await svc.app.inject({ method: 'GET', url: `${base()}?limit=500&${query}`, headers: key });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().approvals as { id: string; agent: string; status: ApprovalStatus }[];
    };
    const expire = (id: string) => svc.ts.store.db.updateTable('approval_requests').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', id).execute();

    async function opened() {
      const agent = newAgent();
      const permit = await issue(svc, agent.did, PAY);
      const req = { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: LARGE };
      const res = await authorize(req);
      assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
      return { agent: agent.did, req, id: res.approval_request_id as string };
    }
    async function approved(who = approver) {
      const o = await opened();
      const statement = (await listed('')).find((x) => x.id === o.id) as unknown as { statement: string };
      const res = await svc.app.inject({ method: 'POST', url: base(), headers: key, payload: { approval_request_id: o.id, key_id: who.keyId, signature: who.sign(statement.statement) } });
      assert.equal(res.statusCode, 201, res.body);
      return o;
    }

    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      approver = await newApprover(svc);
    });
    after(async () => { await svc.stop(); });

    test('each status filter lists exactly the obligations that read as that status; past expires_at only pending and approved read as expired', async () => {
      const signer = await newApprover(svc);
      const pending = await opened();
      const approvedLive = await approved();
      const lapsed = await approved(signer);
      const pendingExpired = await opened();
      const approvedExpired = await approved();
      const consumedExpired = await approved();
      assert.equal((await authorize({ ...consumedExpired.req, approval_request_id: consumedExpired.id })).decision, 'ALLOW');
      const withdrawnExpired = await approved();
      assert.equal((await svc.app.inject({ method: 'POST', url: `${base()}/revoke`, headers: key, payload: { approval_request_id: withdrawnExpired.id } })).statusCode, 200);
      const lapsedExpired = await approved(signer);
      await retireApprovalKey(svc.deps.store, { projectId: svc.projectId, keyId: signer.keyId, actor: 'system', mayRetire: () => true }, new Date());
      for (const o of [pendingExpired, approvedExpired, consumedExpired, withdrawnExpired, lapsedExpired]) await expire(o.id);

      const expected: Record<string, ApprovalStatus> = {
        [pending.id]: 'pending', [approvedLive.id]: 'approved', [lapsed.id]: 'lapsed', [pendingExpired.id]: 'expired',
        [approvedExpired.id]: 'expired', [consumedExpired.id]: 'consumed', [withdrawnExpired.id]: 'withdrawn', [lapsedExpired.id]: 'expired',
      };
      const all = await listed('');
      assert.deepEqual(Object.fromEntries(all.filter((o) => o.id in expected).map((o) => [o.id, o.status])), expected);
      for (const status of APPROVAL_STATUSES) {
        const ours = (await listed(`status=${status}`)).filter((o) => o.id in expected).map((o) => o.id).sort();
        assert.deepEqual(ours, Object.keys(expected).filter((id) => expected[id] === status).sort(), `status=${status}`);
      }
    });

    test('at the instant an obligation expires it lists as expired, not as pending or approved', async () => {
      const pending = await opened();
      const live = await approved();
      const row = await svc.ts.store.db.selectFrom('approval_requests').select('expires_at').where('id', '=', pending.id).executeTakeFirstOrThrow();
      await svc.ts.store.db.updateTable('approval_requests').set({ expires_at: row.expires_at }).where('id', '=', live.id).execute();
      const at = new Date(row.expires_at);
      const ids = async (status: ApprovalStatus) => (await listObligations(svc.ts.store.db, svc.projectId, { limit: 500, status }, at)).map((o) => o.id);
      assert.ok((await ids('expired')).includes(pending.id) && (await ids('expired')).includes(live.id));
      assert.ok(!(await ids('pending')).includes(pending.id));
      assert.ok(!(await ids('approved')).includes(live.id));
    });

    test('the agent filter lists that agent\'s obligations only', async () => {
      const mine = await opened();
      const another = await opened();
      const res = await listed(`agent=${encodeURIComponent(mine.agent)}`);
      assert.deepEqual(res.map((o) => o.id), [mine.id]);
      assert.ok(!res.some((o) => o.id === another.id));
    });

    test('without a limit a page holds 50 obligations and names the next', async () => {
      for (let i = 0; i < 51; i++) await seedObligation(svc);
      const res = await svc.app.inject({ method: 'GET', url: base(), headers: key });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().approvals.length, 50);
      assert.notEqual(res.json().next_cursor, null);
    });
  });
}
