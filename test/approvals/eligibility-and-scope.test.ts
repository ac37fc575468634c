// Checks a mutation audit found unguarded: an approval is usable only while its approver is an
// enabled member holding APPROVER itself (another role does not do, nor APPROVER in another
// project, nor grants counted in another project), obligations and approval keys are named only within their own project, and the
// obligations list filters by status (expiry included, at its very instant) and by agent.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { anotherProject } from '../support/projects.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { newApprover, seedObligation, type Approver } from '../support/approvals.ts';
import { grantRole, revokeRole } from '../../src/services/identity/members.ts';
import { listApprovalKeys, registerApprovalKey, retireApprovalKey } from '../../src/services/approvals/keys.ts';
import { APPROVAL_STATUSES, type ApprovalStatus } from '../../src/domain/approval/index.ts';
import { listObligations } from '../../src/services/approvals/approvals.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };
const LARGE = { minor: 50_000, currency: 'EUR' };

for (const backend of backends()) {
  describe(`approval gaps on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    const base = () => `/v1/projects/${svc.projectId}/approvals`;
    const authorize = async (body: Record<string, unknown>, headers = key) => (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers, payload: body })).json();
    const obligation = async (id: string) => (await svc.app.inject({ method: 'GET', url: `${base()}?limit=500`, headers: key })).json().approvals.find((o: { id: string }) => o.id === id);

    async function opened() {
      const agent = newAgent();
      const permit = await issue(svc, agent.did, PAY);
      const req = { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: LARGE };
      const res = await authorize(req);
      assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
      return { agent, req, id: res.approval_request_id as string };
    }
    async function approve(id: string, who: Approver) {
      const res = await svc.app.inject({ method: 'POST', url: base(), headers: key, payload: { approval_request_id: id, key_id: who.keyId, signature: who.sign((await obligation(id)).statement) } });
      assert.equal(res.statusCode, 201, res.body);
    }

    const listed = async (query: string) => {
      const res = await svc.app.inject({ method: 'GET', url: `${base()}?limit=500&${query}`, headers: key });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().approvals as { id: string; agent: string; status: ApprovalStatus }[];
    };
    const expire = (id: string) => svc.ts.store.db.updateTable('approval_requests').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', id).execute();
    async function approved(who: Approver) {
      const o = await opened();
      await approve(o.id, who);
      return o;
    }

    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
    });
    after(async () => { await svc.stop(); });

    test('an approver who loses APPROVER but keeps another role: the unused approval satisfies nothing', async () => {
      const signer = await newApprover(svc, ['APPROVER', 'AUDITOR']);
      const { req, id } = await opened();
      await approve(id, signer);
      await revokeRole(svc.deps.store, { projectId: svc.projectId, principalId: signer.principalId, role: 'APPROVER', actor: 'system' }, new Date());
      const res = await authorize({ ...req, approval_request_id: id });
      assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
      assert.match(res.detail, /does not hold APPROVER/);
      assert.equal((await obligation(id)).status, 'lapsed');
      // Nor can the key record a new approval.
      const next = await opened();
      // Its owner is told why (a key of no role would get approval_key_cannot_approve).
      const refused = await svc.app.inject({ method: 'POST', url: base(), headers: { authorization: `Bearer ${signer.key}` }, payload: { approval_request_id: next.id, key_id: signer.keyId, signature: signer.sign((await obligation(next.id)).statement) } });
      assert.equal(refused.statusCode, 422, refused.body);
      assert.equal(refused.json().code, 'approver_not_eligible');
    });

    test('an approver who is a member of another project too: the approval counts this project\'s grants, so a re-grant here revives nothing', async () => {
      const signer = await newApprover(svc);
      const db = svc.ts.store.db;
      const { projectId: other } = await anotherProject(svc.ts.store, []);
      // A membership in the other project with many grants numbered, older than this project's, so a
      // read of the approver's membership not scoped to the obligation's project finds it first.
      await db.insertInto('memberships').values({ project_id: other, principal_id: signer.principalId, created_at: new Date(Date.now() - 1000).toISOString(), created_by: null, revoked_at: null, last_grant: 100 }).execute();
      const mine = await db.selectFrom('memberships').selectAll().where('project_id', '=', svc.projectId).where('principal_id', '=', signer.principalId).executeTakeFirstOrThrow();
      await db.deleteFrom('memberships').where('project_id', '=', svc.projectId).where('principal_id', '=', signer.principalId).execute();
      await db.insertInto('memberships').values(mine).execute();
      const { req, id } = await opened();
      await approve(id, signer);
      const recorded = await db.selectFrom('approvals').select('grants_upto').where('approval_request_id', '=', id).executeTakeFirstOrThrow();
      assert.equal(Number(recorded.grants_upto), Number(mine.last_grant), 'the grants counted are this project\'s');
      // APPROVER taken and given back here after approving: the approval stays lapsed.
      await revokeRole(svc.deps.store, { projectId: svc.projectId, principalId: signer.principalId, role: 'APPROVER', actor: 'system' }, new Date());
      await grantRole(svc.deps.store, { projectId: svc.projectId, principalId: signer.principalId, role: 'APPROVER', actor: 'system' }, new Date());
      assert.equal((await authorize({ ...req, approval_request_id: id })).decision, 'REQUIRE_APPROVAL');
    });

    test('an approval by a principal disabled since satisfies nothing', async () => {
      const signer = await newApprover(svc);
      const { req, id } = await opened();
      await approve(id, signer);
      await svc.ts.store.db.updateTable('principals').set({ disabled_at: new Date().toISOString() }).where('id', '=', signer.principalId).execute();
      const res = await authorize({ ...req, approval_request_id: id });
      assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
      assert.match(res.detail, /no longer a member/);
      assert.equal((await obligation(id)).status, 'lapsed', 'the listing and the consumption agree');
    });

    test('a lapsed approval says it lapsed first, whatever else of the request differs (docs/approvals.md)', async () => {
      const signer = await newApprover(svc);
      const { req, id } = await opened();
      await approve(id, signer);
      await retireApprovalKey(svc.deps.store, { projectId: svc.projectId, keyId: signer.keyId, actor: 'system', heldAdmin: true }, new Date());
      assert.equal((await obligation(id)).status, 'lapsed');
      // Another amount: sending the obligation's own amount would not help, so the detail must not send the agent there.
      const res = await authorize({ ...req, amount: { minor: 60_000, currency: 'EUR' }, approval_request_id: id });
      assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
      assert.match(res.detail, new RegExp(`^approval_not_satisfied: approval request ${id} is lapsed: .*retired`));
    });

    test('a request in another project naming this project\'s obligation opens its own; it never points at ours', async () => {
      const { agent, id } = await opened();
      // Project B: same agent DID, the same policy, a permit of its own.
      const { projectId, secret } = await anotherProject(svc.ts.store, ['POLICY_AUTHOR', 'PERMIT_ISSUER'], 'service');
      const bKey = { authorization: `Bearer ${secret}` };
      const bSvc = { ...svc, projectId, keyHeader: async () => bKey } as TestService;
      // Align B's policy version with the one A's obligation names, so that only the project differs.
      const wanted = (await obligation(id)).policy_version as number;
      for (let v = 0; v < wanted; v++) await activatePolicy(bSvc, ALLOW_PAYMENTS);
      const bPermit = await issue(bSvc, agent.did, PAY);
      const res = await authorize({ agent: agent.did, permit: bPermit.jws, action: 'pay', resource: 'resource://shop/1', amount: LARGE, approval_request_id: id }, bKey);
      assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
      assert.match(res.approval_request_id, /^apr_/);
      assert.notEqual(res.approval_request_id, id, 'project B must not be pointed at project A\'s obligation');
      const row = await svc.ts.store.db.selectFrom('approval_requests').select('project_id').where('id', '=', res.approval_request_id).executeTakeFirstOrThrow();
      assert.equal(row.project_id, projectId);
    });

    test('another project\'s key can neither withdraw nor approve this project\'s obligation: 404, and ours is unchanged', async () => {
      const signer = await newApprover(svc);
      const ours = await approved(signer);
      const pending = await opened();
      const { projectId, secret } = await anotherProject(svc.ts.store, [], 'service');
      const bKey = { authorization: `Bearer ${secret}` };
      const revoke = await svc.app.inject({ method: 'POST', url: `/v1/projects/${projectId}/approvals/revoke`, headers: bKey, payload: { approval_request_id: ours.id } });
      assert.equal(revoke.statusCode, 404, revoke.body);
      assert.equal(revoke.json().code, 'not_found');
      const record = await svc.app.inject({ method: 'POST', url: `/v1/projects/${projectId}/approvals`, headers: bKey, payload: { approval_request_id: pending.id, key_id: signer.keyId, signature: signer.sign((await obligation(pending.id)).statement) } });
      assert.equal(record.statusCode, 404, record.body);
      assert.equal(record.json().code, 'not_found');
      assert.deepEqual([(await obligation(ours.id)).status, (await obligation(pending.id)).status], ['approved', 'pending']);
    });

    test('approval keys and the APPROVER role count in their own project only', async () => {
      const signer = await newApprover(svc);
      const bystander = await newApprover(svc);
      // The signer is an APPROVER of project B too, with the same public key registered there.
      const { projectId: other } = await anotherProject(svc.ts.store, []);
      const at = new Date(Date.now() - 1000).toISOString();
      await svc.ts.store.db.insertInto('memberships').values({ project_id: other, principal_id: signer.principalId, created_at: at, created_by: null, revoked_at: null }).execute();
      await svc.ts.store.db.insertInto('role_grants').values({ project_id: other, principal_id: signer.principalId, role: 'APPROVER', granted_at: at, granted_by: null }).execute();
      const inB = await registerApprovalKey(svc.deps.store, { projectId: other, principalId: signer.principalId, publicKey: signer.publicKey, actor: 'system' }, new Date());
      // B's key does not sign in A; A's key is not retired from B; A's members are not listed from B.
      const { req, id } = await opened();
      const statement = (await obligation(id)).statement;
      const byB = await svc.app.inject({ method: 'POST', url: base(), headers: await svc.keyHeader(['AUDITOR']), payload: { approval_request_id: id, key_id: inB.id, signature: signer.sign(statement) } });
      assert.equal(byB.statusCode, 422, byB.body);
      assert.equal(byB.json().code, 'approval_key_unknown');
      const notFound = (e: unknown) => (e as { status: number }).status === 404;
      await assert.rejects(retireApprovalKey(svc.deps.store, { projectId: other, keyId: signer.keyId, actor: 'system', heldAdmin: true }, new Date()), notFound);
      await assert.rejects(listApprovalKeys(svc.ts.store.db, other, bystander.principalId, { limit: 10 }), notFound);
      // Approved in A, then APPROVER revoked in A: holding it in B does not keep the approval usable.
      await approve(id, signer);
      await revokeRole(svc.deps.store, { projectId: svc.projectId, principalId: signer.principalId, role: 'APPROVER', actor: 'system' }, new Date());
      const res = await authorize({ ...req, approval_request_id: id });
      assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
      assert.match(res.detail, /does not hold APPROVER/);
    });

    test('an APPROVER grant recorded in the same millisecond as the approval is not after it: the approval counts', async () => {
      const signer = await newApprover(svc);
      const { req, id } = await opened();
      await approve(id, signer);
      const approval = await svc.ts.store.db.selectFrom('approvals').select('created_at').where('approval_request_id', '=', id).executeTakeFirstOrThrow();
      await svc.ts.store.db.updateTable('role_grants').set({ granted_at: approval.created_at }).where('project_id', '=', svc.projectId).where('principal_id', '=', signer.principalId).execute();
      assert.equal((await obligation(id)).status, 'approved');
      const res = await authorize({ ...req, approval_request_id: id });
      assert.equal(res.reason_code, 'approval_granted', JSON.stringify(res));
    });

    test('each status filter lists exactly the obligations that read as that status; past expires_at only pending and approved read as expired', async () => {
      const approver = await newApprover(svc);
      const signer = await newApprover(svc);
      const pending = await opened();
      const approvedLive = await approved(approver);
      const lapsed = await approved(signer);
      const pendingExpired = await opened();
      const approvedExpired = await approved(approver);
      const consumedExpired = await approved(approver);
      assert.equal((await authorize({ ...consumedExpired.req, approval_request_id: consumedExpired.id })).decision, 'ALLOW');
      const withdrawnExpired = await approved(approver);
      assert.equal((await svc.app.inject({ method: 'POST', url: `${base()}/revoke`, headers: key, payload: { approval_request_id: withdrawnExpired.id } })).statusCode, 200);
      const lapsedExpired = await approved(signer);
      await retireApprovalKey(svc.deps.store, { projectId: svc.projectId, keyId: signer.keyId, actor: 'system', heldAdmin: true }, new Date());
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
      const approver = await newApprover(svc);
      const pending = await opened();
      const live = await approved(approver);
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
      const res = await listed(`agent=${encodeURIComponent(mine.agent.did)}`);
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
