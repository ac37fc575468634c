// JSON the service stored itself and can no longer read (a row damaged or edited in the database) is
// the service's fault: a 500, internal_error or the data's own integrity code, never the 400
// malformed_json that blames the caller's body (http/errors.ts; decision 0001, addendum of session 36).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { ALLOW_PAYMENTS, activatePolicy, decide, issue, newAgent } from '../support/authorize.ts';
import { seedObligation } from '../support/approvals.ts';

const NOT_JSON = '{"cut": ';

function assertServerFault(res: LightMyRequestResponse, code = 'internal_error'): void {
  assert.equal(res.statusCode, 500, res.body);
  assert.equal(res.json().code, code);
}

for (const backend of backends()) {
  describe(`stored JSON that no longer parses (${backend.name})`, () => {
    let svc: TestService;
    before(async () => { svc = await startService(backend); });
    after(async () => { await svc.stop(); });

    test("a permit's stored claims: reading it is 500 internal_error", async () => {
      const { commitment } = await issue(svc, newAgent().did, { actions: ['read'], resources: ['resource://docs/*'] });
      await svc.ts.store.db.updateTable('permits').set({ claims: NOT_JSON }).where('commitment', '=', commitment).execute();
      const auditor = await consoleMember(svc, ['AUDITOR']);
      assertServerFault(await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/permits/${commitment}`, headers: auditor.get }));
    });

    // Form 1 statements do not sign the rules, which the view showed as [] when they did not read.
    for (const statementVersion of [2, 1]) {
      test(`an obligation's stored matched rules (statement form ${statementVersion}): listing obligations is 500 internal_error`, async () => {
        const id = await seedObligation(svc);
        await svc.ts.store.db.updateTable('approval_requests').set({ matched_rules: NOT_JSON, statement_version: statementVersion }).where('id', '=', id).execute();
        const key = await svc.keyHeader([]);
        assertServerFault(await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/approvals`, headers: key }));
        await svc.ts.store.db.deleteFrom('approval_requests').where('id', '=', id).execute();
      });
    }

    test("an API key's stored roles: a request made with it is 500 internal_error, not 400", async () => {
      const { key, keyId } = await svc.member(['AUDITOR']);
      await svc.ts.store.db.updateTable('api_keys').set({ roles: NOT_JSON }).where('id', '=', keyId).execute();
      assertServerFault(await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/audit`, headers: { authorization: `Bearer ${key}` } }));
    });

    test("a recorded decision's stored event: replaying it is 500 log_damaged", async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const decided = await decide(svc, await svc.keyHeader([]), { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' } });
      assert.equal(decided.decision, 'ALLOW');
      await svc.ts.store.db.updateTable('audit_events').set({ data: NOT_JSON }).where('id', '=', decided.audit_id).execute();
      const author = await svc.keyHeader(['POLICY_AUTHOR']);
      const replayed = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/policy/replay`, headers: author, payload: { policy: ALLOW_PAYMENTS } });
      assertServerFault(replayed, 'log_damaged');
      assert.match(replayed.json().detail, new RegExp(`audit event ${decided.audit_id} is not JSON`));
    });
  });
}
