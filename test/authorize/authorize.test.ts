// POST /v1/authorize end to end: every reason code, the meet of the conjuncts, audit durability,
// live revocation of delegation chains, freezing, and budgets that are never overspent.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, delegate, issue, newAgent } from '../support/authorize.ts';
import { recordedDecision, recordedDecisions } from '../support/decisions.ts';
import { permitCommitment } from '../../src/domain/permit/index.ts';

const PAY = { actions: ['pay', 'read'], resources: ['resource://shop/*', 'resource://docs/*'] };

for (const backend of backends()) {
  describe(`authorize on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    /** Releasing an agent takes ADMIN or PERMIT_ISSUER on the machine plane too (decision 0403, addendum). */
    let releaser: { authorization: string };
    let releaserKeyId: string;
    const authorize = (body: Record<string, unknown>, headers = key) =>
      svc.app.inject({ method: 'POST', url: '/v1/authorize', headers, payload: body });

    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
      const rel = await svc.member(['PERMIT_ISSUER']);
      releaser = { authorization: `Bearer ${rel.key}` };
      releaserKeyId = rel.keyId;
    });
    after(async () => { await svc.stop(); });

    test('no active policy: DENY no_active_policy, audited', async () => {
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, PAY);
      const res = await authorize({ agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.equal(body.decision, 'DENY');
      assert.equal(body.reason_code, 'no_active_policy');
      assert.equal(body.policy_version, null);
      const event = await svc.ts.store.db.selectFrom('audit_events').selectAll().where('id', '=', body.audit_id).executeTakeFirstOrThrow();
      assert.equal(event.kind, 'decision');
      // A permit that does not cover the request comes first, but no version took part either: null, not a made-up number.
      const refused = (await authorize({ agent: agent.did, permit: jws, action: 'refund', resource: 'resource://shop/1' })).json();
      assert.deepEqual([refused.reason_code, refused.policy_version], ['permit_invalid', null]);
      assert.equal((await recordedDecision(svc.ts.store.db, refused.audit_id)).policy_version, null);
    });

    test('ALLOW by policy with a covering permit; the response is exactly spec 2.4 and its audit event is committed', async () => {
      const version = await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws, commitment } = await issue(svc, agent.did, PAY);
      const res = await authorize({ agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' } });
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), ['audit_id', 'decision', 'policy_version', 'reason_code', 'request_id']);
      assert.equal(body.decision, 'ALLOW');
      assert.equal(body.reason_code, 'policy_allow');
      assert.equal(body.policy_version, version);
      assert.equal(body.request_id, res.headers['x-request-id']);
      assert.ok(!('execution' in body), 'no execution requested: the field is absent');
      const event = await svc.ts.store.db.selectFrom('audit_events').selectAll().where('id', '=', body.audit_id).executeTakeFirstOrThrow();
      const data = JSON.parse(event.data);
      assert.equal(data.decision, 'ALLOW');
      assert.equal(data.permit_commitment, commitment);
      assert.deepEqual(data.matched_rules, ['pay-small']);
      assert.equal(data.request_id, body.request_id);
      assert.equal(data.policy_version, version);
      const decision = await recordedDecision(svc.ts.store.db, body.audit_id);
      assert.equal(decision.decision, 'ALLOW');
    });

    test('every decision\'s audit event records its inputs, outcome, policy version, matched rules, permit commitment, depth and request id', async () => {
      const version = await activatePolicy(svc, ALLOW_PAYMENTS);
      const holder = newAgent();
      const agent = newAgent();
      const root = await issue(svc, holder.did, PAY);
      const chain = await delegate(root.jws, holder, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const leaf = permitCommitment(chain.split('~').at(-1)!);
      const pay = { agent: agent.did, permit: chain, action: 'pay', resource: 'resource://shop/1', intent: 'order-17' };
      const cases: [Record<string, unknown>, Record<string, unknown>][] = [
        [{ amount: { minor: 500, currency: 'EUR' } }, { decision: 'ALLOW', reason_code: 'policy_allow', matched_rules: ['pay-small'], permit_commitment: leaf, delegation_depth: 1 }],
        [{ amount: { minor: 50_000, currency: 'EUR' } }, { decision: 'REQUIRE_APPROVAL', reason_code: 'policy_require_approval', matched_rules: ['pay-large-needs-person'], permit_commitment: leaf, delegation_depth: 1 }],
        [{ amount: { minor: 500, currency: 'EUR' }, resource: 'resource://docs/secret/a' }, { decision: 'DENY', reason_code: 'permit_invalid', matched_rules: ['pay-small', 'no-secrets'], permit_commitment: leaf, delegation_depth: 1 }],
        // The policy was evaluated all the same: its matches are recorded beside the permit's DENY. A
        // permit that does not verify names no chain: depth 0, and its last link's SHA-256 as the commitment.
        [{ amount: { minor: 500, currency: 'EUR' }, permit: `${chain}x` }, { decision: 'DENY', reason_code: 'permit_invalid', matched_rules: ['pay-small'], permit_commitment: permitCommitment(`${chain.split('~').at(-1)!}x`), delegation_depth: 0 }],
      ];
      for (const [over, expected] of cases) {
        const body: Record<string, unknown> = { ...pay, ...over };
        const res = await authorize(body);
        const answer = res.json();
        const event = await recordedDecision(svc.ts.store.db, answer.audit_id);
        assert.ok(Math.abs(Date.parse(event.request_time) - Date.now()) < 60_000, event.request_time);
        assert.match(event.request_time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'the server clock\'s instant, to the millisecond, in UTC');
        assert.deepEqual({
          agent: event.agent, action: event.action, resource: event.resource, amount: event.amount, intent: event.intent,
          decision: event.decision, reason_code: event.reason_code, detail: event.detail, policy_version: event.policy_version, matched_rules: event.matched_rules,
          permit_commitment: event.permit_commitment, delegation_depth: event.delegation_depth, request_id: event.request_id, approval_request_id: event.approval_request_id,
        }, {
          agent: agent.did, action: 'pay', resource: body.resource, amount: body.amount, intent: 'order-17',
          ...expected, detail: answer.detail ?? null, policy_version: version, request_id: answer.request_id,
          approval_request_id: answer.approval_request_id ?? null,
        }, res.body);
        assert.equal(answer.decision, expected.decision);
      }
    });

    test('every reason code is reached', async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const other = newAgent();
      const { jws } = await issue(svc, agent.did, PAY);
      const cases: [string, Record<string, unknown>, string, string, RegExp?][] = [
        ['policy allow', { action: 'read', resource: 'resource://docs/a' }, 'ALLOW', 'policy_allow'],
        ['policy deny', { action: 'read', resource: 'resource://docs/secret/x' }, 'DENY', 'policy_deny'],
        ['no rule', { action: 'read', resource: 'resource://shop/catalog' }, 'DENY', 'no_matching_rule'],
        ['approval', { action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' } }, 'REQUIRE_APPROVAL', 'policy_require_approval'],
        ['currency mismatch', { action: 'pay', resource: 'resource://shop/1', amount: { minor: 5, currency: 'USD' } }, 'DENY', 'indeterminate_currency_mismatch'],
        ['amount missing', { action: 'pay', resource: 'resource://shop/1' }, 'DENY', 'indeterminate_missing_input'],
        ['action not in permit', { action: 'refund', resource: 'resource://shop/1' }, 'DENY', 'permit_invalid', /action_not_covered/],
        ['resource not in permit', { action: 'read', resource: 'resource://bank/1' }, 'DENY', 'permit_invalid', /resource_not_covered/],
        ['someone else\'s permit', { agent: other.did, action: 'read', resource: 'resource://docs/a' }, 'DENY', 'permit_invalid', /subject_mismatch/],
        ['tampered permit', { permit: jws.slice(0, -4) + (jws.endsWith('AAAA') ? 'BBBB' : 'AAAA'), action: 'read', resource: 'resource://docs/a' }, 'DENY', 'permit_invalid', /signature|malformed/],
        ['garbage permit', { permit: 'not-a-permit', action: 'read', resource: 'resource://docs/a' }, 'DENY', 'permit_invalid', /malformed/],
      ];
      for (const [name, over, decision, reason, detail] of cases) {
        const res = await authorize({ agent: agent.did, permit: jws, ...over });
        assert.equal(res.statusCode, 200, `${name}: ${res.body}`);
        const body = res.json();
        assert.equal(body.decision, decision, `${name}: ${res.body}`);
        assert.equal(body.reason_code, reason, `${name}: ${res.body}`);
        if (detail) assert.match(body.detail, detail, name);
        if (decision === 'REQUIRE_APPROVAL') {
          assert.match(body.approval_request_id, /^apr_/);
          const obligation = await svc.ts.store.db.selectFrom('approval_requests').selectAll().where('id', '=', body.approval_request_id).executeTakeFirstOrThrow();
          assert.equal(obligation.status, 'pending');
          assert.equal(obligation.amount_minor, 50_000);
        }
      }
      const expired = await issue(svc, agent.did, PAY, { ttlSeconds: -10, notBefore: new Date(Date.now() - 60_000) });
      const res = await authorize({ agent: agent.did, permit: expired.jws, action: 'read', resource: 'resource://docs/a' });
      assert.equal(res.json().reason_code, 'permit_invalid');
      assert.match(res.json().detail, /expired/);
      const stopped = newAgent();
      const permit = await issue(svc, stopped.did, PAY);
      assert.equal((await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent: stopped.did } })).statusCode, 200);
      assert.equal((await authorize({ agent: stopped.did, permit: permit.jws, action: 'read', resource: 'resource://docs/a' })).json().reason_code, 'agent_frozen');

      // The catalogue, whole: every code docs/reason-codes.md lists is reached above (no_active_policy
      // by the first test), or by the test named here, which asserts it as an answer of POST /v1/authorize;
      // indeterminate_invalid_input is refused with a 400 before any decision (the same definitions
      // as the evaluator's), so its test is the evaluator's own. A new code needs a test that reaches it.
      const reached = new Set([...cases.map(([, , , reason]) => reason), 'permit_invalid', 'agent_frozen', 'no_active_policy']);
      const elsewhere: Record<string, string> = {
        approval_granted: 'test/approvals/approvals.test.ts',
        policy_integrity: 'test/policy/damaged-active-version.test.ts',
        replay: 'test/executions/executions.test.ts',
        indeterminate_invalid_input: 'test/domain/policy/evaluate.test.ts',
      };
      const documented = readFileSync('docs/reason-codes.md', 'utf8').split('\n').map((l) => /^\| `([a-z_]+)` \| [A-Z_]+ \|/.exec(l)?.[1]).filter((c) => c !== undefined);
      assert.ok(documented.length >= 13, `the catalogue table was read: ${documented}`);
      for (const code of documented) {
        if (reached.has(code)) continue;
        assert.ok(elsewhere[code], `reason code ${code} is documented but no test reaches it`);
        assert.match(readFileSync(elsewhere[code], 'utf8'), new RegExp(`assert[^\\n]*[' ]${code}'`), `${elsewhere[code]} asserts ${code}`);
      }
    });

    test('a DENY writes its audit event only: a DID no one has seen does not become an agent', async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, newAgent().did, PAY);
      const row = () => svc.ts.store.db.selectFrom('agents').select('did').where('project_id', '=', svc.projectId).where('did', '=', agent.did).executeTakeFirst();
      for (const over of [{ permit: jws }, { permit: 'not-a-permit' }]) {
        const denied = (await authorize({ agent: agent.did, action: 'read', resource: 'resource://docs/a', ...over })).json();
        assert.equal(denied.decision, 'DENY');
        assert.equal((await recordedDecision(svc.ts.store.db, denied.audit_id)).agent, agent.did, 'the DENY is audited');
      }
      assert.equal(await row(), undefined, 'no agent row');
    });

    test('meet: a frozen agent is denied whatever it presents, and released it may act again', async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, PAY);
      const req = { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' };
      assert.equal((await authorize(req)).json().decision, 'ALLOW');
      const frozen = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent: agent.did, reason: 'suspicious' } });
      assert.equal(frozen.statusCode, 200, frozen.body);
      assert.equal(frozen.json().frozen, true);
      // Frozen over every other conjunct: a permit and policy that allow, a permit that does not
      // verify, a policy that asks a person, and a policy that denies (no-secrets: its own reason must not win).
      for (const over of [{}, { permit: 'garbage' }, { action: 'pay', amount: { minor: 50_000, currency: 'EUR' }, resource: 'resource://shop/1' },
        { resource: 'resource://docs/secret/a' }]) {
        const res = (await authorize({ ...req, ...over })).json();
        assert.equal(res.decision, 'DENY');
        assert.equal(res.reason_code, 'agent_frozen', JSON.stringify(over));
      }
      const state = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/agents/state?agent=${encodeURIComponent(agent.did)}`, headers: key });
      assert.equal(state.json().frozen, true);
      assert.equal(state.json().reason, 'suspicious');
      assert.match(state.json().frozen_by, /^key_/);
      assert.ok(Date.parse(state.json().frozen_at) <= Date.now());
      assert.equal(state.json().released_at, null);
      const again = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent: agent.did } });
      assert.deepEqual([again.statusCode, again.json().code], [409, 'agent_already_frozen']);
      assert.deepEqual(again.json().state, state.json(), 'the 409 says who froze it, since when and why');
      // Any key may stop an agent; undoing the stop takes the console's roles (decision 0403, addendum).
      const refused = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/release`, headers: key, payload: { agent: agent.did } });
      assert.deepEqual([refused.statusCode, refused.json().code], [403, 'forbidden']);
      const released = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/release`, headers: releaser, payload: { agent: agent.did, reason: 'cleared by review' } });
      assert.equal(released.statusCode, 200);
      // Released, the state still says since when and by whom; a new freeze is a new since-when.
      const after = (await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/agents/state?agent=${encodeURIComponent(agent.did)}`, headers: key })).json();
      assert.deepEqual({ ...after, released_at: typeof after.released_at }, { agent: agent.did, frozen: false, frozen_at: null, frozen_by: null, reason: null, released_at: 'string', released_by: releaserKeyId });
      assert.ok(after.released_at >= state.json().frozen_at);
      assert.deepEqual(released.json(), after);
      assert.equal((await authorize(req)).json().decision, 'ALLOW');
      const events = await svc.ts.store.db.selectFrom('audit_events').select(['kind', 'data']).where('kind', 'like', 'agent.%').execute();
      const of = (kind: string) => events.filter((e) => e.kind === kind).map((e) => JSON.parse(e.data)).find((d) => d.agent === agent.did);
      assert.deepEqual(of('agent.frozen'), { agent: agent.did, reason: 'suspicious' });
      assert.deepEqual(of('agent.released'), { agent: agent.did, reason: 'cleared by review' }, 'the release says why, in the audit log');
    });

    test('meet: a permit that does not cover the request denies whatever the policy says, and opens no obligation', async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const obligations = async () => (await svc.ts.store.db.selectFrom('approval_requests').select('id').where('agent', '=', agent.did).execute()).length;
      const big = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' } };
      const asked = (await authorize(big)).json();
      assert.deepEqual([asked.decision, asked.reason_code], ['REQUIRE_APPROVAL', 'policy_require_approval'], 'the permit covers it: a person is asked');
      assert.equal(await obligations(), 1);
      // The policy would ask a person (pay-large-needs-person) or allow (read-docs); the permit denies both.
      for (const [over, check] of [[{ resource: 'resource://bank/1' }, 'resource_not_covered'], [{ permit: 'garbage' }, 'malformed'],
        [{ action: 'read', resource: 'resource://docs/a', amount: undefined }, 'action_not_covered']] as const) {
        const res = await authorize({ ...big, ...over });
        const body = res.json();
        assert.deepEqual([body.decision, body.reason_code], ['DENY', 'permit_invalid'], res.body);
        assert.match(body.detail, new RegExp(`^${check}:`));
        assert.ok(!('approval_request_id' in body), res.body);
      }
      assert.equal(await obligations(), 1, 'a DENY opened no obligation');
    });

    /** A root permit to a new agent, delegated (read-only) to another new agent. */
    async function delegatedChain() {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const parent = newAgent();
      const child = newAgent();
      const root = await issue(svc, parent.did, PAY);
      const chain = await delegate(root.jws, parent, child.did, { actions: ['read'], resources: ['resource://docs/*'] });
      return { root, parent, child, chain, req: { agent: child.did, permit: chain, action: 'read', resource: 'resource://docs/a' } };
    }

    test('freezing an agent stops every permit it delegated, signed before or after the freeze, on the next decision; released, they act again', async () => {
      const { parent, child, chain, root, req } = await delegatedChain();
      const grandchild = newAgent();
      const deeper = await delegate(chain, child, grandchild.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const deeperReq = { ...req, agent: grandchild.did, permit: deeper };
      assert.equal((await authorize(req)).json().decision, 'ALLOW');
      assert.equal((await authorize(deeperReq)).json().decision, 'ALLOW');
      const freeze = (did: string) => svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent: did } });
      const release = (did: string) => svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/release`, headers: releaser, payload: { agent: did } });
      // A freeze names the agent in the one spelling its DID has: a second spelling of an escape is
      // refused, never answered "frozen" while the agent spelt the other way acts on.
      for (const other of ['did:web:shop.example.com%3a8443', 'did:web:sh%6Fp.example.com%3A8443']) {
        const refused = await freeze(other);
        assert.equal(refused.statusCode, 400, refused.body);
        assert.deepEqual(refused.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`), ['/agent bad_format']);
      }
      assert.equal((await freeze(parent.did)).statusCode, 200);
      // A frozen agent cannot act through a delegate: one made before the freeze, one below it, or
      // one it signs after the freeze for a key of its own.
      const after = newAgent();
      const late = { ...req, agent: after.did, permit: await delegate(root.jws, parent, after.did, { actions: ['read'], resources: ['resource://docs/*'] }) };
      for (const r of [req, deeperReq, late]) {
        const denied = (await authorize(r)).json();
        assert.equal(denied.decision, 'DENY', JSON.stringify(denied));
        assert.equal(denied.reason_code, 'agent_frozen');
        assert.equal(denied.detail, `the permit was delegated by ${parent.did}, which is frozen; nothing a frozen agent granted authorizes until it is released`);
      }
      assert.equal((await release(parent.did)).statusCode, 200);
      for (const r of [req, deeperReq, late]) assert.equal((await authorize(r)).json().decision, 'ALLOW');
      // A delegator in the middle of a chain, which never acted itself, stops the links below it alone.
      assert.equal((await freeze(child.did)).statusCode, 200);
      assert.equal((await authorize(deeperReq)).json().detail, `the permit was delegated by ${child.did}, which is frozen; nothing a frozen agent granted authorizes until it is released`);
      assert.equal((await authorize(late)).json().decision, 'ALLOW');
      assert.equal((await release(child.did)).statusCode, 200);
    });

    test('revoking a parent permit denies every permit delegated from it, on the next decision', async () => {
      const { root, req } = await delegatedChain();
      assert.equal((await authorize(req)).json().decision, 'ALLOW');
      // The delegate cannot use its permit beyond what it was given.
      assert.equal((await authorize({ ...req, action: 'pay', resource: 'resource://shop/1', amount: { minor: 1, currency: 'EUR' } })).json().reason_code, 'permit_invalid');
      await svc.ts.store.transaction(async (trx) => {
        const { revokePermit } = await import('../../src/services/permits/permits.ts');
        await revokePermit(trx, { projectId: svc.projectId, commitment: root.commitment, actor: 'system', now: new Date() });
      });
      const denied = (await authorize(req)).json();
      assert.equal(denied.decision, 'DENY');
      assert.match(denied.detail, /revoked/);
    });

    test('a delegate the service has never seen is denied when its parent permit was revoked before its first decision', async () => {
      // The agent has no row yet: its chain is checked by a statement of its own (commit.ts), not
      // by the agent lock's revocation column.
      const { root, req } = await delegatedChain();
      const { revokePermit } = await import('../../src/services/permits/permits.ts');
      await svc.ts.store.transaction((trx) => revokePermit(trx, { projectId: svc.projectId, commitment: root.commitment, actor: 'system', now: new Date() }));
      const denied = (await authorize(req)).json();
      assert.equal(denied.decision, 'DENY');
      assert.equal(denied.reason_code, 'permit_invalid');
      assert.match(denied.detail, /^revoked:/);
    });

    test(`a budget admitting exactly k requests is never overspent under a 200-way race`, async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const k = 7;
      const { jws, commitment } = await issue(svc, agent.did, { ...PAY, budget: { minor: k * 100, currency: 'EUR' } });
      const results = await Promise.all(Array.from({ length: 200 }, () =>
        authorize({ agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } })));
      assert.deepEqual(results.filter((r) => r.statusCode !== 200).map((r) => r.body), [], 'every request was decided');
      const decisions = results.map((r) => r.json());
      assert.equal(decisions.filter((d) => d.decision === 'ALLOW').length, k);
      assert.equal(decisions.filter((d) => d.decision === 'DENY').length, 200 - k);
      for (const d of decisions.filter((x) => x.decision === 'DENY')) assert.match(d.detail, /budget_exhausted/);
      const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', commitment).executeTakeFirstOrThrow();
      assert.equal(usage.spent_minor, k * 100);
      assert.equal(usage.uses, k);
    });

    test('a use count admits exactly max_uses, and a DENY spends nothing', async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws, commitment } = await issue(svc, agent.did, { ...PAY, max_uses: 3 });
      // A policy DENY first: it must not spend a use.
      assert.equal((await authorize({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/secret/a' })).json().decision, 'DENY');
      const results = await Promise.all(Array.from({ length: 20 }, () => authorize({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' })));
      assert.equal(results.filter((r) => r.json().decision === 'ALLOW').length, 3);
      const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', commitment).executeTakeFirstOrThrow();
      assert.equal(usage.uses, 3);
      // Spent out, the permit is permit_invalid uses_exhausted where it would have allowed; where the
      // policy denies, the counters are not read (a DENY spends nothing): the policy's reason stands
      // (docs/reason-codes.md, precedence).
      const out = (await authorize({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' })).json();
      assert.deepEqual([out.reason_code, out.detail?.split(':')[0]], ['permit_invalid', 'uses_exhausted']);
      const denied = (await authorize({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/secret/a' })).json();
      assert.deepEqual([denied.decision, denied.reason_code], ['DENY', 'policy_deny']);
    });

    test('a spend that one link of the chain refuses spends no link: the ancestors it passed first are given back', async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const holder = newAgent();
      const child = newAgent();
      const root = await issue(svc, holder.did, { ...PAY, budget: { minor: 10_000, currency: 'EUR' } });
      // The root has budget to spare; the child's one use runs out first.
      const chain = await delegate(root.jws, holder, child.did, { ...PAY, budget: { minor: 10_000, currency: 'EUR' }, max_uses: 1 });
      const pay = { agent: child.did, permit: chain, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } };
      assert.equal((await authorize(pay)).json().decision, 'ALLOW');
      const second = (await authorize(pay)).json();
      assert.equal(second.decision, 'DENY');
      assert.match(second.detail, /uses_exhausted/);
      const usage = async (commitment: string) => {
        const u = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', commitment).executeTakeFirstOrThrow();
        return [Number(u.spent_minor), Number(u.uses)];
      };
      assert.deepEqual(await usage(root.commitment), [100, 1], 'the root spent for the ALLOW alone');
      assert.deepEqual(await usage(permitCommitment(chain.split('~').at(-1)!)), [100, 1]);
    });

    test('a REQUIRE_APPROVAL the remaining budget could not cover is DENY, and spends nothing', async () => {
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws, commitment } = await issue(svc, agent.did, { ...PAY, budget: { minor: 30_000, currency: 'EUR' } });
      const big = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 20_000, currency: 'EUR' } };
      const first = (await authorize(big)).json();
      assert.equal(first.decision, 'REQUIRE_APPROVAL', 'it fits the budget: a person is asked');
      const over = (await authorize({ ...big, amount: { minor: 40_000, currency: 'EUR' } })).json();
      assert.equal(over.decision, 'DENY');
      assert.match(over.detail, /amount_exceeds_budget|budget_exhausted/);
      // Spend most of the budget, then a REQUIRE_APPROVAL that no longer fits is denied.
      for (let i = 0; i < 2; i++) assert.equal((await authorize({ ...big, amount: { minor: 9_000, currency: 'EUR' } })).json().decision, 'ALLOW');
      const late = (await authorize(big)).json();
      assert.equal(late.decision, 'DENY');
      assert.match(late.detail, /budget_exhausted/);
      const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', commitment).executeTakeFirstOrThrow();
      assert.equal(usage.spent_minor, 18_000, 'checks made for REQUIRE_APPROVAL spent nothing');
      assert.equal(usage.uses, 2);
    });

    test('bad requests are refused with precise codes before any decision', async () => {
      const agent = newAgent();
      const base = { agent: agent.did, permit: 'x', action: 'read', resource: 'resource://docs/a' };
      const before = (await recordedDecisions(svc.ts.store.db)).length;
      const cases: [Record<string, unknown>, number, string, string?][] = [
        [{ ...base, action: 'a'.repeat(65) }, 400, 'invalid_request', '/action'],
        [{ ...base, resource: 'resource://' + 'a'.repeat(512) }, 400, 'invalid_request', '/resource'],
        [{ ...base, resource: 'https://evil' }, 400, 'invalid_request', '/resource'],
        // Not a resource the policy or a permit could match: refused before any decision, not recorded as a DENY.
        ...['resource:///', 'resource://a b', 'resource://a\nb', 'resource://a\u0000', 'resource://a\u202eb', 'resource://x?q=1#f',
          'resource://*', 'resource://docs/*', 'resource://docs/../admin', 'resource://docs//a', 'resource://docs/a/', 'resource://ä',
          // Escapes: malformed, or spelling a dot segment; the outcome must not depend on whether the active policy reads `resource`.
          'resource://docs/%zz', 'resource://docs/a%2', 'resource://docs/%', 'resource://docs/%2e%2E/admin', 'resource://docs/.%2e', 'resource://%2E', 'resource://docs/%2e',
          // Escapes a downstream decoder turns into structure: an encoded slash or backslash, an encoded "%" (decoded twice), a control character.
          'resource://docs/x%2F..%2F..%2Fadmin', 'resource://docs/..%2f', 'resource://docs/%2E%2E%2Fadmin', 'resource://docs/a%5Cb', 'resource://docs/a%252Fb', 'resource://docs/a%00', 'resource://docs/a%1f', 'resource://docs/a%7F',
          // A dot segment with parameters, an overlong (not UTF-8) "/".
          'resource://docs/..;/admin', 'resource://docs/..%C0%AFadmin',
          // Another spelling of a resource: an escaped unreserved character, lowercase hex (it would pass a DENY on the plain spelling).
          'resource://docs/%73ecret', 'resource://docs/caf%c3%a9', 'resource://DOCS/a', 'resource://x@docs/a', 'resource://docs:/a', 'resource://docs/secret;x/a', 'resource://docs/cafe%CC%81']
          .map((resource): [Record<string, unknown>, number, string, string] => [{ ...base, resource }, 400, 'invalid_request', '/resource']),
        [{ ...base, agent: 'bob' }, 400, 'invalid_request', '/agent'],
        // Not a DID by W3C DID Core's syntax, which the permit claims and the policy use too.
        ...['did:key:', 'did:x:y:', 'did:x:y%zz', 'did:X:y', 'did:x:y/path', 'did:x:y#key-1', 'did:x:ä']
          .map((did): [Record<string, unknown>, number, string, string] => [{ ...base, agent: did }, 400, 'invalid_request', '/agent']),
        // The policy language's actions: printable ASCII, no spaces.
        ...['äöü', 'pay now', 'pay\t', 'pay\u0000']
          .map((action): [Record<string, unknown>, number, string, string] => [{ ...base, action }, 400, 'invalid_request', '/action']),
        [{ ...base, amount: { minor: 1.5, currency: 'EUR' } }, 400, 'invalid_request', '/amount/minor'],
        [{ ...base, amount: { minor: '100', currency: 'EUR' } }, 400, 'invalid_request', '/amount/minor'],
        [{ ...base, amount: { minor: -1, currency: 'EUR' } }, 400, 'invalid_request', '/amount/minor'],
        [{ ...base, amount: { minor: 2 ** 53, currency: 'EUR' } }, 400, 'invalid_request', '/amount/minor'],
        [{ ...base, amount: { minor: 1, currency: 'euro' } }, 400, 'invalid_request', '/amount/currency'],
        [{ ...base, intent: 'i'.repeat(129) }, 400, 'invalid_request', '/intent'],
        [{ ...base, intent: '' }, 400, 'invalid_request', '/intent'],
        // An intent is an id a person reads in the approval statement: no blank one, and nothing that
        // moves or hides text on the approver's screen (a line break, a bidi override, a zero-width space).
        ...['   ', 'order-17\nAPPROVED', 'order \u202e71 RUE', 'order\u200b17', 'order\u202817', 'order\t17']
          .map((intent): [Record<string, unknown>, number, string, string] => [{ ...base, intent }, 400, 'invalid_request', '/intent']),
        // This deployment signs for no chain: refused, not decided as if the alternative were absent.
        [{ ...base, chain_authorization: {} }, 422, 'chain_authorization_unavailable'],
        [{ ...base, extra: 1 }, 400, 'invalid_request', '/extra'],
        [{ agent: agent.did }, 400, 'invalid_request', '/permit'],
        [{ ...base, execution: { merchant: 'm', operation: 'o', payload: {}, nonce: 'n', url: 'http://x' } }, 400, 'execution_url_not_allowed', '/execution/url'],
        [{ ...base, execution: { merchant: 'm', operation: 'o', payload: {}, nonce: 'n' }, chain_authorization: {} }, 400, 'both_execution_and_chain_authorization', '/execution'],
        [{ ...base, execution: { merchant: 'm', operation: 'o', payload: {}, nonce: 'n' }, chain_authorization: {} }, 400, 'both_execution_and_chain_authorization', '/chain_authorization'],
      ];
      for (const [body, status, code, pointer] of cases) {
        const res = await authorize(body);
        assert.equal(res.statusCode, status, `${JSON.stringify(body).slice(0, 80)}: ${res.body}`);
        assert.equal(res.json().code, code);
        if (pointer) assert.ok(res.json().errors.some((e: { pointer: string }) => e.pointer === pointer), `${pointer} in ${res.body}`);
      }
      // The specific refusals keep their code and bring every other error with them, once each.
      const all = (await authorize({ execution: { merchant: 'm', operation: 'o', payload: {}, nonce: 'n', url: 'http://x' }, chain_authorization: {}, action: 'a'.repeat(70), resource: 'resource://docs/a' })).json();
      assert.equal(all.code, 'both_execution_and_chain_authorization');
      assert.deepEqual(all.errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`).sort(),
        ['/action too_long', '/chain_authorization both_execution_and_chain_authorization', '/execution both_execution_and_chain_authorization', '/execution/url execution_url_not_allowed', '/agent required', '/permit required'].sort(), JSON.stringify(all.errors));
      // Errors inside either alternative come too: a wrong type in execution, a chain_authorization that is no object.
      const inside = (await authorize({ ...base, execution: { merchant: 5, operation: 'o', payload: {}, nonce: 'n' }, chain_authorization: 'notanobject' })).json();
      assert.equal(inside.code, 'both_execution_and_chain_authorization');
      assert.deepEqual(inside.errors.map((e: { pointer: string }) => e.pointer).sort(), ['/chain_authorization', '/chain_authorization', '/execution', '/execution/merchant'], JSON.stringify(inside.errors));
      const url = (await authorize({ ...base, agent: 'bob', execution: { merchant: 'm', operation: 'o', payload: {}, nonce: 'n', url: 'http://x' } })).json();
      assert.deepEqual([url.code, url.errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`).sort()],
        ['execution_url_not_allowed', ['/agent bad_format', '/execution/url execution_url_not_allowed']], JSON.stringify(url.errors));
      // Every url member is named, not the first one found: errors come all at once (decision 0001).
      const urls = (await authorize({ ...base, execution: { merchant: 'm', operation: 'o', payload: { a: [{ url: 1 }], url: 2 }, nonce: 'n', url: 'http://x' } })).json();
      assert.deepEqual(urls.errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`).sort(),
        ['/execution/payload/a/0/url execution_url_not_allowed', '/execution/payload/url execution_url_not_allowed', '/execution/url execution_url_not_allowed'], JSON.stringify(urls.errors));
      // ...up to the cap every answer keeps, so a body of many urls does not make a huge answer.
      const many = (await authorize({ ...base, execution: { merchant: 'm', operation: 'o', payload: { a: Array.from({ length: 300 }, () => ({ url: 1 })) }, nonce: 'n' } })).json();
      assert.equal(many.code, 'execution_url_not_allowed');
      assert.equal(many.errors.length, 101);
      assert.equal(many.errors.at(-1).code, 'too_many_errors');
      // A malformed value is reported once, by its form, in words rather than as a regular expression.
      const worded = (await authorize({ ...base, agent: 'agent-7', action: '', resource: 'x' })).json().errors;
      assert.deepEqual(worded.map((e: { pointer: string; code: string }) => [e.pointer, e.code]).sort(), [['/action', 'bad_format'], ['/agent', 'bad_format'], ['/resource', 'bad_format']]);
      for (const e of worded as { pointer: string; message: string }[]) assert.doesNotMatch(e.message, /\^|pattern/, e.pointer);
      assert.match(worded.find((e: { pointer: string }) => e.pointer === '/resource').message, /resource:\/\/<path>/);
      assert.match(worded.find((e: { pointer: string }) => e.pointer === '/agent').message, /did:<method>/);
      // So is every other patterned member of the body: the message says what form is wanted, not a
      // regular expression nor what the member is for.
      const forms = (await authorize({ ...base, approval_request_id: 'apr_1', execution: { merchant: 'shop!', operation: 'pay now', payload: {}, nonce: 'order 17' } })).json().errors as { pointer: string; code: string; message: string }[];
      const wanted: Record<string, RegExp> = {
        '/approval_request_id': /apr_ followed by 26 lowercase letters and digits/,
        '/execution/merchant': /1 to 64 letters, digits, "_", "\." or "-"/,
        '/execution/operation': /1 to 64 letters, digits, "_", "\." or "-"/,
        '/execution/nonce': /1 to 128 printable ASCII characters, no spaces/,
      };
      assert.deepEqual(forms.map((e) => `${e.pointer} ${e.code}`).sort(), Object.keys(wanted).map((p) => `${p} bad_format`).sort(), JSON.stringify(forms));
      for (const e of forms) {
        assert.doesNotMatch(e.message, /\^|pattern/, e.pointer);
        assert.match(e.message, wanted[e.pointer]!, e.pointer);
      }
      assert.equal((await recordedDecisions(svc.ts.store.db)).length, before, 'no decision was recorded');
      // The shortest DIDs and percent escapes are DIDs: decided (here DENY: the permit is no permit), not refused.
      // An intent in any script, with spaces inside, is an intent: decided.
      for (const intent of ['commande é 17', 'заказ 17', '注文-17']) {
        const res = await authorize({ ...base, intent });
        assert.equal(res.statusCode, 200, `${intent}: ${res.body}`);
      }
      for (const did of ['did:x:y', 'did:web:example.com%3A8443', 'did:x::y']) {
        const res = await authorize({ ...base, agent: did });
        assert.equal(res.statusCode, 200, `${did}: ${res.body}`);
        assert.equal(res.json().decision, 'DENY');
      }
      // A second spelling of one DID (lowercase hex, an escaped letter) is refused, not taken for another agent.
      for (const did of ['did:web:example.com%3a8443', 'did:web:ex%61mple.com']) {
        const res = await authorize({ ...base, agent: did });
        assert.equal(res.statusCode, 400, `${did}: ${res.body}`);
        assert.deepEqual(res.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`), ['/agent bad_format']);
        assert.match(res.json().errors[0].message, /uppercase hex/);
      }
    });

    test('a missing, malformed, wrong or revoked key is 401 unauthorized', async () => {
      const member = await svc.member([]);
      const body = { agent: newAgent().did, permit: 'x', action: 'read', resource: 'resource://docs/a' };
      for (const authorization of [undefined, 'Bearer', 'Basic abc', 'Bearer gvl_short', `Bearer gvl_${'A'.repeat(43)}`]) {
        const res = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: authorization ? { authorization } : {}, payload: body });
        assert.equal(res.statusCode, 401);
        assert.equal(res.json().code, 'unauthorized');
      }
      await svc.ts.store.db.updateTable('api_keys').set({ revoked_at: new Date().toISOString() }).where('id', '=', member.keyId).execute();
      const res = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { authorization: `Bearer ${member.key}` }, payload: body });
      assert.equal(res.statusCode, 401);
    });
  });
}
