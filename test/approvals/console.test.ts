// Approval keys and approval views in the console: who may register, list and retire keys, the
// key formats, and the read views (ADMIN, AUDITOR, APPROVER).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { ed25519Pair, newApprover, seedObligation, signText } from '../support/approvals.ts';
import { registerApprovalKey } from '../../src/services/approvals/keys.ts';
import { revokeMember } from '../../src/services/identity/members.ts';

for (const backend of backends()) {
  describe(`approval keys and console views on ${backend.name}`, () => {
    let svc: TestService;
    let admin: ConsoleMember;
    let approver: ConsoleMember;
    const C = () => `/v1/console/projects/${svc.projectId}`;
    const registerKey = (who: ConsoleMember, principalId: string, payload: unknown) =>
      svc.app.inject({ method: 'POST', url: `${C()}/principals/${principalId}/approval-keys`, headers: who.post, payload: JSON.stringify(payload) });

    before(async () => {
      svc = await startService(backend);
      admin = await consoleMember(svc, ['ADMIN']);
      approver = await consoleMember(svc, ['APPROVER']);
    });
    after(async () => { await svc.stop(); });

    test('an APPROVER registers its own key (raw or JWK), lists and retires it; a retired key signs nothing', async () => {
      const raw = ed25519Pair();
      const created = await registerKey(approver, approver.principalId, { public_key: raw.publicKey, name: 'laptop' });
      assert.equal(created.statusCode, 201, created.body);
      assert.deepEqual([created.json().status, created.json().name, created.json().principal_id], ['live', 'laptop', approver.principalId]);
      const jwk = ed25519Pair();
      const viaJwk = await registerKey(approver, approver.principalId, { public_key: { kty: 'OKP', crv: 'Ed25519', x: jwk.publicKey } });
      assert.equal(viaJwk.statusCode, 201, viaJwk.body);
      assert.equal(viaJwk.json().public_key, jwk.publicKey);
      const dup = await registerKey(approver, approver.principalId, { public_key: raw.publicKey });
      assert.equal(dup.statusCode, 409);
      assert.equal(dup.json().code, 'approval_key_exists');
      // Nor by another principal: one public key names one approver in a project.
      const second = await consoleMember(svc, ['APPROVER']);
      const taken = await registerKey(second, second.principalId, { public_key: { kty: 'OKP', crv: 'Ed25519', x: raw.publicKey } });
      assert.deepEqual([taken.statusCode, taken.json().code], [409, 'approval_key_exists']);
      const list = await svc.app.inject({ method: 'GET', url: `${C()}/principals/${approver.principalId}/approval-keys`, headers: approver.get });
      assert.equal(list.statusCode, 200, list.body);
      assert.equal(list.json().approval_keys.length, 2);
      assert.equal(list.json().next_cursor, null);
      // The list pages like every other (newest first, DESIGN.md): a principal may register many keys.
      const one = (await svc.app.inject({ method: 'GET', url: `${C()}/principals/${approver.principalId}/approval-keys?limit=1`, headers: approver.get })).json();
      assert.deepEqual(one.approval_keys.map((k: { id: string }) => k.id), [viaJwk.json().id]);
      const two = (await svc.app.inject({ method: 'GET', url: `${C()}/principals/${approver.principalId}/approval-keys?limit=1&cursor=${encodeURIComponent(one.next_cursor)}`, headers: approver.get })).json();
      assert.deepEqual(two.approval_keys.map((k: { id: string }) => k.id), [created.json().id]);
      assert.equal(two.next_cursor, null);
      assert.equal((await svc.app.inject({ method: 'GET', url: `${C()}/principals/${approver.principalId}/approval-keys?limit=5&x=1`, headers: approver.get })).statusCode, 400);
      const keyId = created.json().id;
      const retired = await svc.app.inject({ method: 'POST', url: `${C()}/approval-keys/${keyId}/retire`, headers: approver.post, payload: '{}' });
      assert.equal(retired.statusCode, 200, retired.body);
      assert.equal(retired.json().status, 'retired');
      const twice = await svc.app.inject({ method: 'POST', url: `${C()}/approval-keys/${keyId}/retire`, headers: admin.post, payload: '{}' });
      assert.equal(twice.statusCode, 409);
      assert.equal(twice.json().code, 'approval_key_retired');
      const again = await registerKey(approver, approver.principalId, { public_key: raw.publicKey });
      assert.equal(again.statusCode, 409, 'a retired key is never registered again');
      // The retired key's signature over a real statement is refused.
      const id = await seedObligation(svc);
      const view = (await svc.app.inject({ method: 'GET', url: `${C()}/approvals/${id}`, headers: approver.get })).json();
      const res = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/approvals`, headers: await svc.keyHeader(['AUDITOR']), payload: { approval_request_id: id, key_id: keyId, signature: signText(raw.privateKey, view.statement) } });
      assert.equal(res.statusCode, 422);
      assert.equal(res.json().code, 'approval_key_retired', 'told to a key that may read approval keys');
    });

    test('who may manage keys: only the principal itself registers one (not ADMIN); ADMIN or the owner retires; a non-APPROVER gets no key; another APPROVER may not read or retire', async () => {
      const other = await consoleMember(svc, ['APPROVER']);
      const auditor = await consoleMember(svc, ['AUDITOR']);
      const plain = await consoleMember(svc, ['POLICY_AUTHOR']);
      // An ADMIN holding a key's private half could approve as its owner: refused.
      const forSomeoneElse = await registerKey(admin, approver.principalId, { public_key: ed25519Pair().publicKey });
      assert.equal(forSomeoneElse.statusCode, 403, forSomeoneElse.body);
      const byAdmin = await registerKey(approver, approver.principalId, { public_key: ed25519Pair().publicKey });
      assert.equal(byAdmin.statusCode, 201, byAdmin.body);
      const byOther = await registerKey(other, approver.principalId, { public_key: ed25519Pair().publicKey });
      assert.equal(byOther.statusCode, 403);
      const selfNotApprover = await registerKey(plain, plain.principalId, { public_key: ed25519Pair().publicKey });
      assert.equal(selfNotApprover.json().code, 'not_an_approver');
      // A principal's list holds its own keys only, not the others' of the project.
      assert.equal((await registerKey(other, other.principalId, { public_key: ed25519Pair().publicKey })).statusCode, 201);
      const approverKeys = await svc.app.inject({ method: 'GET', url: `${C()}/principals/${approver.principalId}/approval-keys?limit=500`, headers: auditor.get });
      assert.equal(approverKeys.statusCode, 200);
      assert.ok(approverKeys.json().approval_keys.length > 0);
      assert.ok(approverKeys.json().approval_keys.every((k: { principal_id: string }) => k.principal_id === approver.principalId), approverKeys.body);
      // A member removed since registers nothing (the service refuses it whoever calls).
      const removed = await consoleMember(svc, ['APPROVER']);
      await revokeMember(svc.deps.store, { projectId: svc.projectId, principalId: removed.principalId, actor: 'system' }, new Date());
      await assert.rejects(registerApprovalKey(svc.deps.store, { projectId: svc.projectId, principalId: removed.principalId, publicKey: ed25519Pair().publicKey, actor: 'system' }, new Date()),
        (e: { status: number; code: string }) => e.status === 422 && e.code === 'not_a_member');
      assert.equal((await svc.app.inject({ method: 'GET', url: `${C()}/principals/${approver.principalId}/approval-keys`, headers: other.get })).statusCode, 403);
      const retireByOther = await svc.app.inject({ method: 'POST', url: `${C()}/approval-keys/${byAdmin.json().id}/retire`, headers: other.post, payload: '{}' });
      assert.equal(retireByOther.statusCode, 403);
      const retireByAdmin = await svc.app.inject({ method: 'POST', url: `${C()}/approval-keys/${byAdmin.json().id}/retire`, headers: admin.post, payload: '{}' });
      assert.equal(retireByAdmin.statusCode, 200);
      assert.equal(retireByAdmin.json().retired_by, admin.principalId, 'the retiring ADMIN, not the key\'s owner');
      const events = await svc.ts.store.db.selectFrom('audit_events').select(['kind', 'actor', 'data']).where('kind', 'like', 'approval_key.%').execute();
      const about = (kind: string) => events.filter((e) => e.kind === kind).map((e) => ({ actor: e.actor, ...JSON.parse(e.data) })).find((d) => d.key_id === byAdmin.json().id);
      assert.deepEqual(about('approval_key.registered'), { actor: approver.principalId, key_id: byAdmin.json().id, principal_id: approver.principalId, public_key: byAdmin.json().public_key });
      assert.deepEqual(about('approval_key.retired'), { actor: admin.principalId, key_id: byAdmin.json().id, principal_id: approver.principalId });
    });

    test('malformed keys and unknown principals or keys are clear 4xx problems', async () => {
      const bad: [unknown, number][] = [
        ['AAAA', 400], ['not base64!', 400], [{ kty: 'OKP', crv: 'Ed25519', x: ed25519Pair().publicKey, d: 'secret' }, 400],
        [{ kty: 'RSA', crv: 'Ed25519', x: ed25519Pair().publicKey }, 400], [42, 400],
      ];
      for (const [public_key, status] of bad) {
        const res = await registerKey(approver, approver.principalId, { public_key });
        assert.equal(res.statusCode, status, JSON.stringify(public_key));
        assert.equal(res.json().code, 'invalid_request');
      }
      // A JWK declared for another algorithm or use is not taken as a signature key.
      const declared: [Record<string, unknown>, string][] = [[{ alg: 'RS256' }, 'key_type'], [{ use: 'enc' }, 'key_use'], [{ key_ops: ['encrypt'] }, 'key_use']];
      for (const [extra, code] of declared) {
        const res = await registerKey(approver, approver.principalId, { public_key: { kty: 'OKP', crv: 'Ed25519', x: ed25519Pair().publicKey, ...extra } });
        assert.equal(res.statusCode, 400, res.body);
        assert.deepEqual([res.json().code, res.json().errors[0].code], ['invalid_request', code]);
      }
      // Nobody registers a key for another principal, known or not (decision 0502, addendum).
      const unknown = await registerKey(admin, 'prn_00000000000000000000000000', { public_key: ed25519Pair().publicKey });
      assert.equal(unknown.statusCode, 403);
      const noKey = await svc.app.inject({ method: 'POST', url: `${C()}/approval-keys/apk_00000000000000000000000000/retire`, headers: admin.post, payload: '{}' });
      assert.equal(noKey.statusCode, 404);
      const notMember = await svc.app.inject({ method: 'GET', url: `${C()}/principals/prn_00000000000000000000000000/approval-keys`, headers: admin.get });
      assert.equal(notMember.statusCode, 404, notMember.body);
      assert.equal(notMember.json().code, 'not_found');
    });

    test('console views list obligations newest first with paging and status filter, and show one by request or approval id', async () => {
      const first = await seedObligation(svc);
      // Ids order by their millisecond; two made in the same one order arbitrarily (lib/ids.ts).
      await new Promise((resolve) => setTimeout(resolve, 2));
      const second = await seedObligation(svc);
      const who = await newApprover(svc);
      const view = (await svc.app.inject({ method: 'GET', url: `${C()}/approvals/${second}`, headers: admin.get })).json();
      const rec = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/approvals`, headers: { authorization: `Bearer ${who.key}` }, payload: { approval_request_id: second, key_id: who.keyId, signature: who.sign(view.statement) } });
      assert.equal(rec.statusCode, 201, rec.body);
      const auditor = await consoleMember(svc, ['AUDITOR']);
      const page1 = await svc.app.inject({ method: 'GET', url: `${C()}/approvals?limit=1`, headers: auditor.get });
      assert.equal(page1.statusCode, 200, page1.body);
      assert.equal(page1.json().approvals[0].id, second);
      const page2 = await svc.app.inject({ method: 'GET', url: `${C()}/approvals?limit=1&cursor=${page1.json().next_cursor}`, headers: auditor.get });
      assert.equal(page2.json().approvals[0].id, first);
      const approved = await svc.app.inject({ method: 'GET', url: `${C()}/approvals?status=approved`, headers: approver.get });
      assert.deepEqual(approved.json().approvals.map((o: { id: string }) => o.id), [second]);
      const byApproval = await svc.app.inject({ method: 'GET', url: `${C()}/approvals/${rec.json().approval.id}`, headers: approver.get });
      assert.equal(byApproval.json().id, second);
      assert.equal((await svc.app.inject({ method: 'GET', url: `${C()}/approvals/apr_00000000000000000000000000`, headers: admin.get })).statusCode, 404);
      const author = await consoleMember(svc, ['POLICY_AUTHOR']);
      assert.equal((await svc.app.inject({ method: 'GET', url: `${C()}/approvals`, headers: author.get })).statusCode, 403);
    });
  });
}
