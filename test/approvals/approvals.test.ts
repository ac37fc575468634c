// Approvals end to end (issue 7; docs/approvals.md): an approval discharges exactly one obligation
// for exactly its action, grants no authority, is consumed at most once (invariant 4), and every
// refusal leaves the store as it was.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import canonicalize from 'canonicalize';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { newApprover, type Approver } from '../support/approvals.ts';
import { revokePermit } from '../../src/services/permits/permits.ts';
import { mintApiKey } from '../../src/services/identity/api-keys.ts';
import { recordedDecision, recordedDecisions } from '../support/decisions.ts';

const PAY = { actions: ['pay', 'read'], resources: ['resource://shop/*', 'resource://docs/*'] };
const LARGE = { minor: 50_000, currency: 'EUR' };

for (const backend of backends()) {
  describe(`approvals on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    let approver: Approver;
    const base = () => `/v1/projects/${svc.projectId}/approvals`;
    const authorize = (body: Record<string, unknown>) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body });
    const record = (body: Record<string, unknown>, headers = key) => svc.app.inject({ method: 'POST', url: base(), headers, payload: body });
    const revoke = (body: Record<string, unknown>) => svc.app.inject({ method: 'POST', url: `${base()}/revoke`, headers: key, payload: body });
    const obligation = async (id: string) => {
      const res = await svc.app.inject({ method: 'GET', url: `${base()}?limit=500`, headers: key });
      assert.equal(res.statusCode, 200, res.body);
      const found = res.json().approvals.find((o: { id: string }) => o.id === id);
      assert.ok(found, `obligation ${id} listed`);
      return found;
    };
    const auditCount = async () => Number((await svc.ts.store.db.selectFrom('audit_events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

    /** An agent with a permit whose large payment was answered REQUIRE_APPROVAL. */
    async function opened(extra: Record<string, unknown> = {}) {
      const agent = newAgent();
      const permit = await issue(svc, agent.did, PAY);
      const req = { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: LARGE, ...extra };
      const res = (await authorize(req)).json();
      assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
      assert.match(res.approval_request_id, /^apr_/);
      return { agent, permit, req, id: res.approval_request_id as string };
    }
    async function approve(id: string, who = approver) {
      const o = await obligation(id);
      const res = await record({ approval_request_id: id, key_id: who.keyId, signature: who.sign(o.statement) });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    }

    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      approver = await newApprover(svc);
    });
    after(async () => { await svc.stop(); });

    test('the obligation states exactly what is to be approved, and its statement is RFC 8785 JSON of those facts', async () => {
      const { agent, id, permit } = await opened({ intent: 'invoice-42' });
      const o = await obligation(id);
      assert.equal(o.status, 'pending');
      assert.equal(o.permit_commitment, permit.commitment);
      assert.equal(Date.parse(o.expires_at) - Date.parse(o.created_at), 24 * 3600_000, 'open for 24 hours');
      assert.deepEqual(o.matched_rules, ['pay-large-needs-person']);
      assert.equal(o.approval, null);
      const expected = canonicalize({
        type: 'gavel-approval/v1', approval_request_id: id, project_id: svc.projectId, agent: agent.did, action: 'pay',
        resource: 'resource://shop/1', amount: LARGE, intent: 'invoice-42', policy_version: o.policy_version,
        matched_rules: ['pay-large-needs-person'], expires_at: o.expires_at,
      });
      assert.equal(o.statement, expected, 'the statement names the rules that asked for approval (form 2, decision 0505)');
      // An obligation opened before migration 0907 (form 1) keeps the statement it was signed over.
      await svc.ts.store.db.updateTable('approval_requests').set({ statement_version: 1 }).where('id', '=', id).execute();
      const old = await obligation(id);
      assert.equal(old.statement, canonicalize({ ...JSON.parse(expected!), matched_rules: undefined }));
      assert.deepEqual(old.matched_rules, ['pay-large-needs-person'], 'the view still shows the rules');
    });

    test('approval then re-authorize: ALLOW approval_granted, consumed once; a second authorize gets a new obligation', async () => {
      const { req, id } = await opened();
      const approved = await approve(id);
      assert.equal(approved.status, 'approved');
      assert.equal(approved.approval.approver, approver.principalId);
      assert.equal(approved.approval.recorded_by, approved.requested_by, 'recorded by the relaying API key, not the approver');
      const again = await authorize({ ...req, approval_request_id: id });
      const body = again.json();
      assert.equal(body.decision, 'ALLOW', again.body);
      assert.equal(body.reason_code, 'approval_granted');
      const o = await obligation(id);
      assert.equal(o.status, 'consumed');
      const decision = await recordedDecision(svc.ts.store.db, body.audit_id);
      assert.equal(o.approval.consumed_by_decision, decision.decision_id);
      assert.equal(o.approval.consumed_at, decision.request_time, 'consumed at the time of the consuming decision');
      assert.equal(decision.approval_request_id, id);
      // Consumed: the same request again is not covered (REPLAY comes with executions; without a
      // nonce a repeat is a new decision, and it must not consume anything).
      const third = (await authorize({ ...req, approval_request_id: id })).json();
      assert.equal(third.decision, 'REQUIRE_APPROVAL');
      assert.equal(third.reason_code, 'policy_require_approval');
      assert.notEqual(third.approval_request_id, id);
      assert.match(third.detail, /approval_not_satisfied: .* is consumed/);
      // Spent is what it is, whatever else differs: not "differs in amount".
      const fourth = (await authorize({ ...req, amount: { ...LARGE, minor: LARGE.minor + 1 }, approval_request_id: id })).json();
      assert.match(fourth.detail, new RegExp(`^approval_not_satisfied: approval request ${id} is consumed`));
      assert.equal((await obligation(id)).approval.consumed_by_decision, decision.decision_id);
    });

    test('four eyes: the person holding the API key that asked cannot approve; another APPROVER can', async () => {
      const agent = newAgent();
      const permit = await issue(svc, agent.did, PAY);
      const req = { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: LARGE };
      const own = { authorization: `Bearer ${approver.key}` };
      const opened = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: own, payload: req });
      const id = opened.json().approval_request_id as string;
      const o = await obligation(id);
      const keyId = (await svc.ts.store.db.selectFrom('api_keys').select('id').where('principal_id', '=', approver.principalId).executeTakeFirstOrThrow()).id;
      assert.equal(o.requested_by, keyId);
      const auditor = await svc.keyHeader(['AUDITOR']);
      const before = await auditCount();
      const self = await record({ approval_request_id: id, key_id: approver.keyId, signature: approver.sign(o.statement) }, own);
      assert.equal(self.statusCode, 422, self.body);
      assert.equal(self.json().code, 'self_approval');
      // Relayed by another key it is still the same person's approval: refused alike, nothing written
      // (said as self_approval to a key that may read API keys' holders, an AUDITOR's).
      assert.equal((await record({ approval_request_id: id, key_id: approver.keyId, signature: approver.sign(o.statement) }, auditor)).json().code, 'self_approval');
      assert.equal(await auditCount(), before);
      assert.equal((await obligation(id)).status, 'pending');
      const other = await newApprover(svc);
      // Whoever minted the requesting key holds its secret too: an ADMIN who minted a key for
      // someone else and asked with it cannot approve either.
      const admin = await newApprover(svc, ['ADMIN', 'APPROVER']);
      const minted = await svc.ts.store.transaction((trx) => mintApiKey(trx, { projectId: svc.projectId, principalId: other.principalId, name: 'for other', roles: [], actor: admin.principalId }));
      const asked = (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { authorization: `Bearer ${minted.secret}` }, payload: req })).json();
      const byMinter = await record({ approval_request_id: asked.approval_request_id, key_id: admin.keyId, signature: admin.sign((await obligation(asked.approval_request_id)).statement) }, auditor);
      assert.equal(byMinter.json().code, 'self_approval', byMinter.body);
      assert.match(byMinter.json().detail, /minted the API key/);
      assert.equal((await approve(id, other)).status, 'approved');
      assert.equal((await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: own, payload: { ...req, approval_request_id: id } })).json().decision, 'ALLOW');
    });

    test('an approval is for the policy version its statement names: another version activated meanwhile asks again', async () => {
      const { req, id } = await opened();
      const signed = await obligation(id);
      await approve(id);
      // The same rules, saved and activated as a new version.
      const next = await activatePolicy(svc, ALLOW_PAYMENTS);
      assert.notEqual(next, signed.policy_version);
      const res = (await authorize({ ...req, approval_request_id: id })).json();
      assert.equal(res.decision, 'REQUIRE_APPROVAL', JSON.stringify(res));
      assert.match(res.detail, /differs from approval request .* in policy_version/);
      assert.equal((await obligation(id)).status, 'approved', 'not consumed');
    });

    test('an approval grants no authority: the permit revoked meanwhile still gives DENY, and the approval is not consumed', async () => {
      const { req, id, permit } = await opened();
      await approve(id);
      await svc.ts.store.transaction((trx) => revokePermit(trx, { projectId: svc.projectId, commitment: permit.commitment, actor: 'system', now: new Date() }));
      const res = (await authorize({ ...req, approval_request_id: id })).json();
      assert.equal(res.decision, 'DENY');
      assert.equal(res.reason_code, 'permit_invalid');
      assert.match(res.detail, /revoked/);
      assert.equal((await obligation(id)).status, 'approved');
    });

    test('a DENY keeps its own detail: a named obligation that does not apply is not what it reports', async () => {
      const { req, id, permit } = await opened();
      await approve(id);
      await svc.ts.store.transaction((trx) => revokePermit(trx, { projectId: svc.projectId, commitment: permit.commitment, actor: 'system', now: new Date() }));
      const res = (await authorize({ ...req, amount: { minor: 50_001, currency: 'EUR' }, approval_request_id: id })).json();
      assert.deepEqual([res.decision, res.reason_code], ['DENY', 'permit_invalid'], JSON.stringify(res));
      assert.match(res.detail, /revoked/);
      assert.equal((await obligation(id)).status, 'approved');
    });

    test('an approval does not cover the permit\'s spent budget: DENY, and the approval stays unconsumed', async () => {
      const agent = newAgent();
      const permit = await issue(svc, agent.did, { ...PAY, budget: { minor: 60_000, currency: 'EUR' } });
      const req = { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: LARGE };
      const id = (await authorize(req)).json().approval_request_id;
      await approve(id);
      // Spend most of the budget with small payments the policy allows outright.
      for (let i = 0; i < 2; i++) assert.equal((await authorize({ ...req, amount: { minor: 10_000, currency: 'EUR' } })).json().decision, 'ALLOW');
      const res = (await authorize({ ...req, approval_request_id: id })).json();
      assert.equal(res.decision, 'DENY');
      assert.match(res.detail, /budget_exhausted/);
      assert.equal(res.approval_request_id, undefined, 'a DENY names no obligation: the consumption was undone');
      const o = await obligation(id);
      assert.equal(o.status, 'approved');
      assert.equal(o.approval.consumed_at, null);
    });

    test('a pending obligation named by a request the budget denies: DENY names no obligation, in the answer or its event; it stays pending', async () => {
      const agent = newAgent();
      const permit = await issue(svc, agent.did, { ...PAY, budget: { minor: 60_000, currency: 'EUR' } });
      const req = { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: LARGE };
      const id = (await authorize(req)).json().approval_request_id;
      for (let i = 0; i < 2; i++) assert.equal((await authorize({ ...req, amount: { minor: 10_000, currency: 'EUR' } })).json().decision, 'ALLOW');
      const res = (await authorize({ ...req, approval_request_id: id })).json();
      assert.equal(res.decision, 'DENY', JSON.stringify(res));
      assert.match(res.detail, /budget_exhausted/);
      assert.equal(res.approval_request_id, undefined);
      const event = await svc.ts.store.db.selectFrom('audit_events').select('data').where('id', '=', res.audit_id).executeTakeFirstOrThrow();
      assert.equal(JSON.parse(event.data).approval_request_id, null);
      assert.equal((await obligation(id)).status, 'pending');
    });

    test('the re-authorize must match exactly: another amount, resource or intent is not covered', async () => {
      const { req, id } = await opened({ intent: 'order-7' });
      await approve(id);
      for (const [field, over] of [
        ['amount', { amount: { minor: 50_001, currency: 'EUR' } }],
        ['amount', { amount: { minor: 49_999, currency: 'EUR' } }],
        ['resource', { resource: 'resource://shop/2' }],
        ['intent', { intent: 'order-8' }],
        ['intent', { intent: undefined }],
      ] as const) {
        const res = (await authorize({ ...req, ...over, approval_request_id: id })).json();
        assert.equal(res.decision, 'REQUIRE_APPROVAL', field);
        assert.notEqual(res.approval_request_id, id);
        assert.match(res.detail, new RegExp(`differs .* in ${field}`));
      }
      const other = newAgent();
      const otherPermit = await issue(svc, other.did, PAY);
      const res = (await authorize({ ...req, agent: other.did, permit: otherPermit.jws, approval_request_id: id })).json();
      assert.match(res.detail, /differs .* in agent/);
      assert.equal((await obligation(id)).status, 'approved');
      assert.equal((await authorize({ ...req, approval_request_id: id })).json().reason_code, 'approval_granted');
    });

    test('naming a pending obligation for the same action returns it again instead of opening another', async () => {
      const { req, id } = await opened();
      const res = (await authorize({ ...req, approval_request_id: id })).json();
      assert.equal(res.decision, 'REQUIRE_APPROVAL');
      assert.equal(res.approval_request_id, id);
    });

    test('a revoked approval satisfies nothing; revoking twice or a consumed one is 409 and changes nothing', async () => {
      const { req, id } = await opened();
      const pending = await revoke({ approval_request_id: id });
      assert.equal(pending.statusCode, 409);
      assert.equal(pending.json().code, 'not_approved');
      await approve(id);
      const revoked = await revoke({ approval_request_id: id, reason: 'changed my mind' });
      assert.equal(revoked.statusCode, 200, revoked.body);
      assert.equal(revoked.json().status, 'withdrawn', 'the spec\'s name for a revoked approval (section 3)');
      assert.equal(revoked.json().approval.revoke_reason, 'changed my mind');
      // Who withdrew it and when, in the answer and in every later view of it.
      const withdrawal = revoked.json().approval;
      assert.match(withdrawal.revoked_at, /^\d{4}-\d\d-\d\dT/);
      assert.match(withdrawal.revoked_by, /^\S+$/);
      const listedWithdrawal = (await obligation(id)).approval;
      assert.deepEqual([listedWithdrawal.revoked_at, listedWithdrawal.revoked_by, listedWithdrawal.revoke_reason], [withdrawal.revoked_at, withdrawal.revoked_by, 'changed my mind']);
      const audits = await auditCount();
      // Unknown or malformed obligations: clear 4xx problems, nothing written.
      const unknown = await revoke({ approval_request_id: id.slice(0, -1) + (id.endsWith('0') ? '1' : '0') });
      assert.equal(unknown.statusCode, 404, unknown.body);
      assert.equal(unknown.json().code, 'not_found');
      const malformed = await revoke({ approval_request_id: 'apr_nope' });
      assert.equal(malformed.statusCode, 400, malformed.body);
      assert.equal(malformed.json().code, 'invalid_request');
      const twice = await revoke({ approval_request_id: id });
      assert.equal(twice.statusCode, 409);
      assert.equal(twice.json().code, 'approval_withdrawn');
      assert.equal(await auditCount(), audits);
      const res = (await authorize({ ...req, approval_request_id: id })).json();
      assert.equal(res.decision, 'REQUIRE_APPROVAL');
      assert.match(res.detail, /is withdrawn/);
      const reapprove = await record({ approval_request_id: id, key_id: approver.keyId, signature: approver.sign((await obligation(id)).statement) });
      assert.equal(reapprove.statusCode, 409);
      assert.equal(reapprove.json().code, 'approval_withdrawn');

      const second = await opened();
      await approve(second.id);
      assert.equal((await authorize({ ...second.req, approval_request_id: second.id })).json().decision, 'ALLOW');
      const late = await revoke({ approval_request_id: second.id });
      assert.equal(late.statusCode, 409);
      assert.equal(late.json().code, 'approval_consumed');
      assert.equal((await obligation(second.id)).status, 'consumed');
    });

    test('an expired approval satisfies nothing, and an expired obligation cannot be approved', async () => {
      const { req, id } = await opened();
      await approve(id);
      const past = new Date(Date.now() - 1000).toISOString();
      await svc.ts.store.db.updateTable('approval_requests').set({ expires_at: past }).where('id', '=', id).execute();
      assert.equal((await obligation(id)).status, 'expired');
      const res = (await authorize({ ...req, approval_request_id: id })).json();
      assert.equal(res.decision, 'REQUIRE_APPROVAL');
      assert.match(res.detail, /is expired/);
      const expiredRevoke = await revoke({ approval_request_id: id });
      assert.equal(expiredRevoke.json().code, 'approval_request_expired');

      const other = await opened();
      await svc.ts.store.db.updateTable('approval_requests').set({ expires_at: past }).where('id', '=', other.id).execute();
      const late = await record({ approval_request_id: other.id, key_id: approver.keyId, signature: approver.sign((await obligation(other.id)).statement) });
      assert.equal(late.statusCode, 409);
      assert.equal(late.json().code, 'approval_request_expired');
    });

    test('refused approvals: retired key, non-APPROVER, a different amount, malformed input, unknown obligation, approving twice; nothing changes', async () => {
      const { id } = await opened();
      const o = await obligation(id);
      const other = await newApprover(svc);
      const retiring = await newApprover(svc);
      const { retireApprovalKey } = await import('../../src/services/approvals/keys.ts');
      await retireApprovalKey(svc.deps.store, { projectId: svc.projectId, keyId: retiring.keyId, actor: 'system', heldAdmin: true }, new Date());
      const demoted = await newApprover(svc);
      await svc.ts.store.db.deleteFrom('role_grants').where('principal_id', '=', demoted.principalId).execute();
      // A key that may read why a key cannot approve (a key of no role gets one code for every reason).
      const auditor = await svc.keyHeader(['AUDITOR']);
      const audits = await auditCount();
      const expectRefusal = async (body: Record<string, unknown>, status: number, code: string) => {
        const res = await record(body, auditor);
        assert.equal(res.statusCode, status, `${code}: ${res.body}`);
        assert.equal(res.json().code, code);
      };
      // Signed over the statement of a different amount.
      const tampered = JSON.parse(o.statement);
      tampered.amount.minor = 5_000;
      await expectRefusal({ approval_request_id: id, key_id: approver.keyId, signature: approver.sign(canonicalize(tampered)!) }, 422, 'signature_invalid');
      // Signed by another approver's key but naming this key.
      await expectRefusal({ approval_request_id: id, key_id: approver.keyId, signature: other.sign(o.statement) }, 422, 'signature_invalid');
      // A retired key.
      await expectRefusal({ approval_request_id: id, key_id: retiring.keyId, signature: retiring.sign(o.statement) }, 422, 'approval_key_retired');
      // A key whose owner no longer holds APPROVER.
      await expectRefusal({ approval_request_id: id, key_id: demoted.keyId, signature: demoted.sign(o.statement) }, 422, 'approver_not_eligible');
      // Malformed and unknown.
      await expectRefusal({ approval_request_id: id, key_id: approver.keyId, signature: 'not base64url!' }, 400, 'invalid_request');
      await expectRefusal({ approval_request_id: id, key_id: approver.keyId, signature: Buffer.alloc(63).toString('base64url') }, 400, 'invalid_request');
      await expectRefusal({ approval_request_id: id, key_id: approver.keyId }, 400, 'invalid_request');
      await expectRefusal({ approval_request_id: 'apr_nope', key_id: approver.keyId, signature: approver.sign(o.statement) }, 400, 'invalid_request');
      await expectRefusal({ approval_request_id: id.slice(0, -1) + (id.endsWith('0') ? '1' : '0'), key_id: approver.keyId, signature: approver.sign(o.statement) }, 404, 'not_found');
      await expectRefusal({ approval_request_id: id, key_id: 'apk_00000000000000000000000000', signature: approver.sign(o.statement) }, 422, 'approval_key_unknown');
      assert.equal(await auditCount(), audits, 'no refusal writes anything');
      assert.equal((await obligation(id)).status, 'pending');
      // Approved once; a second approval, even a valid one by another approver, is 409.
      await approve(id);
      const after1 = await auditCount();
      await expectRefusal({ approval_request_id: id, key_id: other.keyId, signature: other.sign(o.statement) }, 409, 'already_approved');
      assert.equal(await auditCount(), after1);
      assert.equal((await obligation(id)).approval.key_id, approver.keyId);
    });

    test('why a key cannot approve is told only to a caller that may read approval keys (ADMIN, AUDITOR, the key\'s owner); any other key gets one 422 approval_key_cannot_approve', async () => {
      const { retireApprovalKey } = await import('../../src/services/approvals/keys.ts');
      const retiring = await newApprover(svc);
      await retireApprovalKey(svc.deps.store, { projectId: svc.projectId, keyId: retiring.keyId, actor: 'system', heldAdmin: true }, new Date());
      const demoted = await newApprover(svc);
      await svc.ts.store.db.deleteFrom('role_grants').where('principal_id', '=', demoted.principalId).execute();
      // An approver asking with its own API key: its approval would be a self-approval.
      const selfish = await newApprover(svc);
      const agent = newAgent();
      const permit = await issue(svc, agent.did, PAY);
      const asked = (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { authorization: `Bearer ${selfish.key}` }, payload: { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: LARGE } })).json();
      const { id } = await opened();
      const unknown = 'apk_00000000000000000000000000';
      const cases = [
        { obligation: id, keyId: retiring.keyId, sign: retiring.sign, owner: retiring.key, code: 'approval_key_retired' },
        { obligation: id, keyId: demoted.keyId, sign: demoted.sign, owner: demoted.key, code: 'approver_not_eligible' },
        { obligation: asked.approval_request_id as string, keyId: selfish.keyId, sign: selfish.sign, owner: selfish.key, code: 'self_approval' },
        { obligation: id, keyId: unknown, sign: approver.sign, owner: undefined, code: 'approval_key_unknown' },
      ];
      const auditor = await svc.keyHeader(['AUDITOR']);
      const admin = await svc.keyHeader(['ADMIN']);
      const audits = await auditCount();
      for (const c of cases) {
        const body = { approval_request_id: c.obligation, key_id: c.keyId, signature: c.sign((await obligation(c.obligation)).statement) };
        // A key of no role (an agent's, an integration's) learns neither the key's state nor its owner's roles or API keys.
        const bystander = await record(body);
        assert.equal(bystander.statusCode, 422, bystander.body);
        assert.deepEqual([bystander.json().code, bystander.json().detail], ['approval_key_cannot_approve',
          `approval key ${c.keyId} cannot approve this obligation: it is unknown in this project or retired, its owner is not a member holding APPROVER, or its owner holds or minted the API key that made the request; a key of ADMIN or AUDITOR, or of the approval key's owner, is told which`], c.code);
        const tellable: [string, { authorization: string }][] = [['auditor', auditor], ['admin', admin]];
        if (c.owner) tellable.push(['owner', { authorization: `Bearer ${c.owner}` }]);
        for (const [who, headers] of tellable) {
          const told = await record(body, headers);
          assert.equal(told.statusCode, 422, `${who}: ${told.body}`);
          assert.equal(told.json().code, c.code, who);
        }
      }
      assert.equal(await auditCount(), audits, 'no refusal writes anything');
      assert.deepEqual([(await obligation(id)).status, (await obligation(asked.approval_request_id)).status], ['pending', 'pending']);
    });

    test('an obligation already decided answers its state (409) before the signature or the key is judged: the caller may read that state anyway', async () => {
      const other = await newApprover(svc);
      const retiring = await newApprover(svc);
      const { retireApprovalKey } = await import('../../src/services/approvals/keys.ts');
      await retireApprovalKey(svc.deps.store, { projectId: svc.projectId, keyId: retiring.keyId, actor: 'system', heldAdmin: true }, new Date());
      const approved = await opened();
      await approve(approved.id);
      const consumed = await opened();
      await approve(consumed.id);
      assert.equal((await authorize({ ...consumed.req, approval_request_id: consumed.id })).json().reason_code, 'approval_granted');
      const withdrawn = await opened();
      await approve(withdrawn.id);
      assert.equal((await revoke({ approval_request_id: withdrawn.id })).statusCode, 200);
      const expired = await opened();
      await svc.ts.store.db.updateTable('approval_requests').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', expired.id).execute();
      const audits = await auditCount();
      for (const [id, code] of [[approved.id, 'already_approved'], [consumed.id, 'approval_consumed'], [withdrawn.id, 'approval_withdrawn'], [expired.id, 'approval_request_expired']] as const) {
        const { statement } = await obligation(id);
        for (const [keyId, signature] of [
          [approver.keyId, other.sign(statement)], // another key's signature: would be signature_invalid
          [retiring.keyId, retiring.sign(statement)], // a retired key: would be approval_key_retired
          ['apk_00000000000000000000000000', approver.sign(statement)], // unknown: would be approval_key_unknown
        ]) {
          const res = await record({ approval_request_id: id, key_id: keyId, signature });
          assert.equal(res.statusCode, 409, `${code}: ${res.body}`);
          assert.equal(res.json().code, code);
        }
      }
      // The same key reads each state from the list anyway: the 409 tells it nothing it may not know.
      assert.deepEqual(await Promise.all([approved, consumed, withdrawn, expired].map(async (o) => (await obligation(o.id)).status)), ['approved', 'consumed', 'withdrawn', 'expired']);
      assert.equal(await auditCount(), audits, 'no refusal writes anything');
    });

    test('a signature counts for its own obligation\'s exact bytes only: not a twin obligation, not replayed after use, not S + L, not the statement re-serialized', async () => {
      // An intent outside ASCII, so Unicode normalization and JSON escapes change the bytes.
      const first = await opened({ intent: 'caf\u00e9' });
      // The same agent, action, resource, amount and intent asked again: a second obligation, a twin but for its id.
      const twin = (await authorize(first.req)).json();
      assert.equal(twin.decision, 'REQUIRE_APPROVAL');
      assert.notEqual(twin.approval_request_id, first.id);
      const signed = approver.sign((await obligation(first.id)).statement);
      const refused = async (id: string, signature: string) => {
        const res = await record({ approval_request_id: id, key_id: approver.keyId, signature });
        assert.equal(res.statusCode, 422, res.body);
        assert.equal(res.json().code, 'signature_invalid');
      };
      await refused(twin.approval_request_id, signed);
      const statement = (await obligation(twin.approval_request_id)).statement as string;
      const parsed = JSON.parse(statement) as Record<string, unknown>;
      for (const variant of [
        JSON.stringify(parsed, null, 1), `${statement}\n`, JSON.stringify(Object.fromEntries(Object.entries(parsed).reverse())),
        statement.normalize('NFD'), statement.replace('\u00e9', '\\u00e9'),
      ]) {
        assert.notEqual(variant, statement);
        await refused(twin.approval_request_id, approver.sign(variant));
      }
      // S + L: the same signature with a non-canonical scalar (RFC 8032 §5.1.7 requires S < L).
      const sig = Buffer.from(approver.sign(statement), 'base64url');
      const L = 2n ** 252n + 27742317777372353535851937790883648493n;
      let s = BigInt(`0x${Buffer.from(sig.subarray(32)).reverse().toString('hex')}`) + L;
      for (let i = 32; i < 64; i++, s >>= 8n) sig[i] = Number(s & 0xffn);
      await refused(twin.approval_request_id, sig.toString('base64url'));
      assert.equal((await obligation(twin.approval_request_id)).status, 'pending');
      // The first approval is used; its signature replayed on a new obligation for the same request is not an approval.
      assert.equal((await record({ approval_request_id: first.id, key_id: approver.keyId, signature: signed })).statusCode, 201);
      assert.equal((await authorize({ ...first.req, approval_request_id: first.id })).json().reason_code, 'approval_granted');
      const next = (await authorize(first.req)).json();
      await refused(next.approval_request_id, signed);
    });

    test('retiring the key or revoking the approver\'s role after approving withdraws the unconsumed approval', async () => {
      const signer = await newApprover(svc);
      const { req, id } = await opened();
      await approve(id, signer);
      const { retireApprovalKey } = await import('../../src/services/approvals/keys.ts');
      await retireApprovalKey(svc.deps.store, { projectId: svc.projectId, keyId: signer.keyId, actor: 'system', heldAdmin: true }, new Date());
      const res = (await authorize({ ...req, approval_request_id: id })).json();
      assert.equal(res.decision, 'REQUIRE_APPROVAL');
      assert.match(res.detail, /retired/);
      // And it reads as lapsed, not approved: in the view and in the status filters.
      assert.equal((await obligation(id)).status, 'lapsed');
      const listed = async (status: string) => (await svc.app.inject({ method: 'GET', url: `${base()}?limit=500&status=${status}`, headers: key })).json().approvals.map((o: { id: string }) => o.id);
      assert.ok((await listed('lapsed')).includes(id));
      assert.ok(!(await listed('approved')).includes(id));
      const live = await opened();
      await approve(live.id);
      assert.ok((await listed('approved')).includes(live.id), 'an approval by a live key still lists as approved');
      assert.ok(!(await listed('lapsed')).includes(live.id));
      // Withdrawn for good: the approver losing APPROVER and getting it back revives nothing.
      const flapping = await newApprover(svc);
      const later = await opened();
      await approve(later.id, flapping);
      const { grantRole, revokeRole } = await import('../../src/services/identity/members.ts');
      const role = { projectId: svc.projectId, principalId: flapping.principalId, role: 'APPROVER' as const, actor: 'system' };
      await revokeRole(svc.deps.store, role, new Date());
      assert.equal((await obligation(later.id)).status, 'lapsed');
      await grantRole(svc.deps.store, role, new Date());
      assert.equal((await obligation(later.id)).status, 'lapsed', 'still lapsed with the role back');
      assert.ok((await listed('lapsed')).includes(later.id));
      const revived = (await authorize({ ...later.req, approval_request_id: later.id })).json();
      assert.equal(revived.decision, 'REQUIRE_APPROVAL');
      assert.match(revived.detail, /lost APPROVER after approving/);
      // Lapsed, it may still be revoked: withdrawn (docs/approvals.md).
      const revokedLapsed = await revoke({ approval_request_id: later.id });
      assert.equal(revokedLapsed.statusCode, 200, revokedLapsed.body);
      assert.equal(revokedLapsed.json().status, 'withdrawn');
      // New approvals by the same approver count again.
      const fresh = await opened();
      await approve(fresh.id, flapping);
      assert.equal((await authorize({ ...fresh.req, approval_request_id: fresh.id })).json().decision, 'ALLOW');
    });

    test('every change is audited: recorded, revoked, and the consuming decision', async () => {
      const { req, id } = await opened();
      const approved = await approve(id);
      const events = await svc.ts.store.db.selectFrom('audit_events').selectAll().where('kind', 'like', 'approval%').execute();
      const recorded = events.find((e) => e.kind === 'approval.recorded' && JSON.parse(e.data).approval_request_id === id);
      assert.ok(recorded);
      // The event keeps what was signed and by which key, so the approval verifies from the log alone.
      assert.deepEqual(JSON.parse(recorded.data), {
        approval_id: approved.approval.id, approval_request_id: id, key_id: approver.keyId, approver: approver.principalId,
        signature: approver.sign(approved.statement), statement: approved.statement,
      });
      const allowed = (await authorize({ ...req, approval_request_id: id })).json();
      const event = await svc.ts.store.db.selectFrom('audit_events').selectAll().where('id', '=', allowed.audit_id).executeTakeFirstOrThrow();
      const data = JSON.parse(event.data);
      assert.equal(data.reason_code, 'approval_granted');
      assert.equal(data.approval_request_id, id);
      // A withdrawal is audited too, with the approval, obligation and reason it names.
      const other = await opened();
      const withdrawn = await approve(other.id);
      assert.equal((await revoke({ approval_request_id: other.id, reason: 'not this one' })).statusCode, 200);
      const revokedEvents = await svc.ts.store.db.selectFrom('audit_events').selectAll().where('kind', '=', 'approval.revoked').execute();
      const revokedEvent = revokedEvents.map((e) => JSON.parse(e.data)).find((d) => d.approval_request_id === other.id);
      assert.deepEqual(revokedEvent, { approval_id: withdrawn.approval.id, approval_request_id: other.id, reason: 'not this one' });
    });

    test('50 concurrent authorizes racing for one approval: exactly one consumes it', async () => {
      const { req, id } = await opened();
      await approve(id);
      const results = (await Promise.all(Array.from({ length: 50 }, () => authorize({ ...req, approval_request_id: id })))).map((r) => {
        assert.equal(r.statusCode, 200, r.body);
        return r.json();
      });
      const allowed = results.filter((r) => r.decision === 'ALLOW');
      assert.equal(allowed.length, 1, JSON.stringify(results.map((r) => r.decision)));
      assert.equal(allowed[0].reason_code, 'approval_granted');
      const losers = results.filter((r) => r.decision !== 'ALLOW');
      assert.ok(losers.every((r) => r.decision === 'REQUIRE_APPROVAL' && r.approval_request_id !== id));
      assert.equal(new Set(losers.map((r) => r.approval_request_id)).size, 49, 'each loser gets an obligation of its own');
      const o = await obligation(id);
      assert.equal(o.status, 'consumed');
      const consuming = await recordedDecision(svc.ts.store.db, allowed[0].audit_id);
      assert.equal(o.approval.consumed_by_decision, consuming.decision_id);
      const granted = (await recordedDecisions(svc.ts.store.db)).filter((d) => d.reason_code === 'approval_granted' && d.approval_request_id === id);
      assert.equal(granted.length, 1);
    });

    test('concurrent approvals of one obligation: exactly one is recorded, the others get 409 already_approved', async () => {
      const { id } = await opened();
      const statement = (await obligation(id)).statement;
      const approvers = await Promise.all(Array.from({ length: 5 }, () => newApprover(svc)));
      const audits = await auditCount();
      const results = await Promise.all([...approvers, ...approvers].map((who) => record({ approval_request_id: id, key_id: who.keyId, signature: who.sign(statement) })));
      assert.deepEqual(results.map((r) => r.statusCode).sort(), [201, ...Array(9).fill(409)], results.map((r) => r.body).join('\n'));
      assert.ok(results.filter((r) => r.statusCode === 409).every((r) => r.json().code === 'already_approved'));
      assert.equal(await auditCount(), audits + 1, 'one approval.recorded event');
      assert.equal((await obligation(id)).approval.id, results.find((r) => r.statusCode === 201)!.json().approval.id);
    });

    test('a concurrent revoke and authorize: exactly one of them wins', async () => {
      for (let round = 0; round < 5; round++) {
        const { req, id } = await opened();
        await approve(id);
        const [auth, rev] = await Promise.all([authorize({ ...req, approval_request_id: id }), revoke({ approval_request_id: id })]);
        const allowed = auth.json().decision === 'ALLOW';
        const revoked = rev.statusCode === 200;
        assert.ok(allowed !== revoked, `round ${round}: allowed=${allowed} revoked=${revoked}`);
        assert.equal((await obligation(id)).status, allowed ? 'consumed' : 'withdrawn');
      }
    });
  });
}
