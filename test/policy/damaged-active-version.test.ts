// An active policy version damaged in storage (decision 0152, addendum of session 36): every decision
// under it is a recorded DENY policy_integrity naming that version, with nothing spent, opened or
// run; a frozen agent and an invalid permit keep their own reasons; simulation and replay answer
// 500 policy_integrity, and so does reading it; the process warns once; activating a sound version ends it.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startPayments, stopBoth } from '../support/payments.ts';
import type { TestService } from '../support/service.ts';
import type { TestMerchant } from '../support/merchant.ts';
import { ALLOW_PAYMENTS, decide, issue, newAgent, type Agent, type Decided } from '../support/authorize.ts';
import { recordedDecision } from '../support/decisions.ts';

// Each edits one stored column, as damage or tampering in the database would.
const DAMAGE: [string, (svc: TestService, version: number) => Promise<unknown>][] = [
  ['its document edited', (svc, v) => damageVersion(svc, v, { document: JSON.stringify({ spec_version: '1', rules: [{ id: 'everything', effect: 'ALLOW' }] }) })],
  ['its recorded hash edited', (svc, v) => damageVersion(svc, v, { hash: 'f'.repeat(64) })],
  ['a document that no longer validates', (svc, v) => damageVersion(svc, v, { document: '{"spec_version":"1","rules":[{"id":"everything","effect":"MAYBE"}]}' })],
  ['a document that is no longer JSON', (svc, v) => damageVersion(svc, v, { document: '{"spec_version":' })],
  ['the active pointer naming another hash', (svc) => svc.ts.store.db.updateTable('policy_active').set({ hash: 'e'.repeat(64) }).where('project_id', '=', svc.projectId).execute()],
];

function damageVersion(svc: TestService, version: number, columns: { document?: string; hash?: string }) {
  return svc.ts.store.db.updateTable('policy_versions').set(columns).where('project_id', '=', svc.projectId).where('version', '=', version).execute();
}

/** The detail of a decision (or 500) under damaged active version `version`: says so, quotes nothing. */
function assertDamagedDetail(detail: string | undefined, version: number): void {
  assert.match(detail ?? '', new RegExp(`^the active policy version ${version} no longer matches what was saved .*decisions fail closed until a sound version is activated$`));
  assert.doesNotMatch(detail ?? '', /everything|MAYBE|spec_version/);
}

for (const backend of backends()) {
  describe(`a damaged active policy version (${backend.name})`, () => {
    let svc: TestService;
    let merchant: TestMerchant;
    let key: { authorization: string };
    let author: { authorization: string };
    let agent: Agent;
    /** A permit good for one use: a use spent by a DENY would show on the next ALLOW. */
    let permit: string;
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => { if (w.code === 'GAVEL_POLICY_INTEGRITY') warnings.push(w.message); };
    const url = (suffix = '') => `/v1/projects/${svc.projectId}/policy${suffix}`;
    const activateSaved = async (policy: unknown) => {
      const saved = await svc.app.inject({ method: 'PUT', url: url(), headers: author, payload: { policy, note: 'n' } });
      assert.equal(saved.statusCode, 201, saved.body);
      const version = saved.json().version as number;
      const activated = await svc.app.inject({ method: 'POST', url: url('/activate'), headers: author, payload: { version } });
      assert.equal(activated.statusCode, 200, activated.body);
      return version;
    };
    const pay = (over: Record<string, unknown> = {}) => ({ agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' }, ...over });
    const execution = () => ({ merchant: 'shop', operation: 'ok', payload: {}, nonce: randomUUID() });

    /** DENY policy_integrity under `version`, answered and recorded alike. */
    const assertFailedClosed = async (decided: Decided & { matched_rules?: unknown; execution?: unknown }, version: number) => {
      assert.deepEqual([decided.decision, decided.reason_code, decided.policy_version], ['DENY', 'policy_integrity', version]);
      assertDamagedDetail(decided.detail, version);
      assert.equal(decided.execution, undefined);
      const event = await recordedDecision(svc.ts.store.db, decided.audit_id);
      assert.deepEqual([event.decision, event.reason_code, event.detail, event.policy_version, event.matched_rules, event.approval_request_id],
        ['DENY', 'policy_integrity', decided.detail, version, [], null]);
      return event;
    };

    before(async () => {
      process.on('warning', onWarning);
      ({ svc, merchant, key, agent } = await startPayments(backend, { actions: ['pay'], resources: ['resource://shop/*'] }));
      author = await svc.keyHeader(['POLICY_AUTHOR']);
      permit = (await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], max_uses: 1 })).jws;
    });
    after(async () => {
      process.off('warning', onWarning);
      await stopBoth(svc, merchant);
    });

    for (const [what, damage] of DAMAGE) {
      test(`${what}: the decision is a recorded DENY policy_integrity under that version`, async () => {
        const version = await activateSaved(ALLOW_PAYMENTS);
        await damage(svc, version);
        await assertFailedClosed(await decide(svc, key, pay()), version);
        // Again, from the damage remembered with the pointer: the same answer.
        await assertFailedClosed(await decide(svc, key, pay()), version);
        // Its document is not served as the policy in force.
        const read = await svc.app.inject({ method: 'GET', url: url(), headers: author });
        assert.equal(read.statusCode, 500, read.body);
        assert.equal(read.json().code, 'policy_integrity');
        assertDamagedDetail(read.json().detail, version);
      });
    }

    test('nothing is spent, no obligation opened, no execution run; a sound activation ends it', async () => {
      const damaged = await activateSaved(ALLOW_PAYMENTS);
      await damageVersion(svc, damaged, { hash: 'a'.repeat(64) });
      const before = await svc.ts.store.db.selectFrom('approval_requests').select('id').where('project_id', '=', svc.projectId).execute();
      const paid = await decide(svc, key, pay({ execution: execution() }));
      const event = await assertFailedClosed(paid, damaged);
      assert.equal(event.execution?.merchant, 'shop', 'the event names the call it refused');
      // ALLOW_PAYMENTS asks a person above 10,000: the damaged version asks nobody.
      await assertFailedClosed(await decide(svc, key, pay({ amount: { minor: 50_000, currency: 'EUR' } })), damaged);
      assert.equal(merchant.totalCalls(), 0);
      assert.equal((await svc.ts.store.db.selectFrom('executions').select('id').where('project_id', '=', svc.projectId).execute()).length, 0);
      const after = await svc.ts.store.db.selectFrom('approval_requests').select('id').where('project_id', '=', svc.projectId).execute();
      assert.equal(after.length, before.length);

      const sound = await activateSaved(ALLOW_PAYMENTS);
      const allowed = (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: pay({ execution: execution() }) })).json();
      assert.deepEqual([allowed.decision, allowed.reason_code, allowed.policy_version, allowed.execution?.status], ['ALLOW', 'policy_allow', sound, 'SUCCEEDED'],
        'the permit\'s one use was left by the DENYs');
      assert.equal(merchant.totalCalls(), 1);
      // No policy decided those DENYs: a replay leaves them aside, counted by their reason.
      const replayed = (await svc.app.inject({ method: 'POST', url: url('/replay'), headers: author, payload: { version: sound } })).json();
      assert.ok(replayed.skipped.policy_integrity >= 2, JSON.stringify(replayed.skipped));
    });

    test('a frozen agent is still agent_frozen, an invalid permit still permit_invalid', async () => {
      const version = await activateSaved(ALLOW_PAYMENTS);
      await damageVersion(svc, version, { document: '{"spec_version":' });
      const other = newAgent();
      const foreign = await decide(svc, key, pay({ agent: other.did }));
      assert.deepEqual([foreign.decision, foreign.reason_code, foreign.policy_version], ['DENY', 'permit_invalid', version]);
      const frozen = newAgent();
      const { jws } = await issue(svc, frozen.did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const admin = await svc.keyHeader(['ADMIN']);
      const freeze = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: admin, payload: { agent: frozen.did } });
      assert.equal(freeze.statusCode, 200, freeze.body);
      const decided = await decide(svc, key, pay({ agent: frozen.did, permit: jws }));
      assert.deepEqual([decided.decision, decided.reason_code, decided.policy_version], ['DENY', 'agent_frozen', version]);
      assert.equal((await recordedDecision(svc.ts.store.db, decided.audit_id)).reason_code, 'agent_frozen');
    });

    test('simulation against it and a replay of it answer 500 policy_integrity; the process warns once', async () => {
      const version = await activateSaved(ALLOW_PAYMENTS);
      await damageVersion(svc, version, { document: JSON.stringify({ spec_version: '1', rules: [{ id: 'everything', effect: 'ALLOW' }] }) });
      await assertFailedClosed(await decide(svc, key, pay()), version);
      const simulated = await svc.app.inject({ method: 'POST', url: url('/simulate'), headers: author, payload: { request: { agent: agent.did, action: 'pay' } } });
      assert.equal(simulated.statusCode, 500, simulated.body);
      assert.equal(simulated.json().code, 'policy_integrity');
      assertDamagedDetail(simulated.json().detail, version);
      const replayed = await svc.app.inject({ method: 'POST', url: url('/replay'), headers: author, payload: { version } });
      assert.equal(replayed.statusCode, 500, replayed.body);
      assert.equal(replayed.json().code, 'policy_integrity');
      assert.match(replayed.json().detail, new RegExp(`^stored policy version ${version} no longer matches what was saved`));
      assert.doesNotMatch(replayed.json().detail, /everything/);
      await assertFailedClosed(await decide(svc, key, pay()), version);
      const ours = warnings.filter((w) => w.includes(`policy version ${version} of project ${svc.projectId} `));
      assert.equal(ours.length, 1, ours.join('\n'));
      assert.doesNotMatch(ours[0]!, /everything/);
      // A submitted document still simulates: only the damaged version is refused.
      const submitted = await svc.app.inject({ method: 'POST', url: url('/simulate'), headers: author, payload: { request: { agent: agent.did, action: 'pay' }, policy: ALLOW_PAYMENTS } });
      assert.equal(submitted.statusCode, 200, submitted.body);
    });
  });
}
