// Policy lifecycle over the machine routes, on every backend: save, read, list, activate (roles,
// four-eyes, audit of refusals), simulate (no audit), replay, and every kind of bad input.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { getActivePolicy } from '../../src/services/policy/active.ts';
import { evaluate, policyHash, validatePolicy } from '../../src/domain/policy/index.ts';
import { newId } from '../../src/lib/ids.ts';
import { insertDecisionEvent } from '../support/decisions.ts';
import { withOffset } from '../support/offsets.ts';

const AGENT = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK';

const doc = (limit: number) => ({
  spec_version: '1',
  rules: [
    { id: 'small-payments', effect: 'ALLOW', when: { op: 'and', args: [
      { op: 'eq', input: 'action', value: 'pay' },
      { op: 'lte', input: 'amount.minor', value: limit, currency: 'EUR' },
    ] } },
    { id: 'big-payments', effect: 'REQUIRE_APPROVAL', when: { op: 'and', args: [
      { op: 'eq', input: 'action', value: 'pay' },
      { op: 'gt', input: 'amount.minor', value: limit, currency: 'EUR' },
    ] } },
  ],
});

for (const backend of backends()) {
  describe(`policy lifecycle (${backend.name})`, () => {
    let svc: TestService;
    let author: { principalId: string; key: string };
    let author2: { principalId: string; key: string };
    let admin: { principalId: string; key: string };
    let auditor: { principalId: string; key: string };
    let plain: { principalId: string; key: string };
    const h = (m: { key: string }) => ({ authorization: `Bearer ${m.key}` });
    const url = (suffix = '') => `/v1/projects/${svc.projectId}/policy${suffix}`;
    const put = (who: { key: string }, payload: unknown) => svc.app.inject({ method: 'PUT', url: url(), headers: h(who), payload: payload as object });
    const post = (who: { key: string }, suffix: string, payload: unknown) => svc.app.inject({ method: 'POST', url: url(suffix), headers: h(who), payload: payload as object });
    const audits = async (kind: string) => svc.ts.store.db.selectFrom('audit_events').selectAll().where('project_id', '=', svc.projectId).where('kind', '=', kind).orderBy('seq').execute();
    const countVersions = async () => Number((await svc.ts.store.db.selectFrom('policy_versions').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

    before(async () => {
      svc = await startService(backend);
      author = await svc.member(['POLICY_AUTHOR']);
      author2 = await svc.member(['POLICY_AUTHOR']);
      admin = await svc.member(['ADMIN']);
      auditor = await svc.member(['AUDITOR']);
      plain = await svc.member(['APPROVER']);
    });
    after(async () => { await svc.stop(); });

    test('no active policy: GET is 404 no_active_policy, simulate of the active policy too', async () => {
      const res = await svc.app.inject({ method: 'GET', url: url(), headers: h(plain) });
      assert.equal(res.statusCode, 404);
      assert.equal(res.json().code, 'no_active_policy');
      assert.equal(await getActivePolicy(svc.ts.store.db, svc.projectId), null);
      const sim = await post(author, '/simulate', { request: { agent: AGENT, action: 'pay' } });
      assert.equal(sim.statusCode, 404);
      assert.equal(sim.json().code, 'no_active_policy');
    });

    test('save creates integer versions with note, creator and hash, and never activates', async () => {
      const a = await put(author, { policy: doc(1000), note: 'first' });
      assert.equal(a.statusCode, 201, a.body);
      const saved = a.json();
      assert.equal(saved.version, 1);
      assert.equal(saved.state, 'saved');
      assert.equal(saved.note, 'first');
      assert.equal(saved.created_by, author.principalId);
      const v = validatePolicy(doc(1000));
      assert.ok(v.ok);
      assert.equal(saved.hash, policyHash(v.policy));
      const b = await put(author2, { policy: doc(5000), note: 'second' });
      assert.equal(b.json().version, 2);
      assert.equal((await svc.app.inject({ method: 'GET', url: url(), headers: h(plain) })).statusCode, 404, 'saving never activates');
      assert.equal((await audits('policy.saved')).length, 2);
    });

    test('ADMIN without POLICY_AUTHOR cannot activate; the refusal is audited and committed', async () => {
      const before = (await audits('policy.activation_refused')).length;
      const res = await post(admin, '/activate', { version: 1 });
      assert.equal(res.statusCode, 403);
      assert.equal(res.json().code, 'forbidden');
      const refused = await audits('policy.activation_refused');
      assert.equal(refused.length, before + 1);
      const data = JSON.parse(refused.at(-1)!.data);
      assert.equal(data.reason, 'role_missing');
      assert.equal(data.version, 1);
      assert.deepEqual(data.roles, ['ADMIN']);
      assert.equal(await getActivePolicy(svc.ts.store.db, svc.projectId), null);
      // Even with a malformed body, the role refusal is recorded.
      const bad = await post(auditor, '/activate', { version: 'one' });
      assert.equal(bad.statusCode, 403);
      assert.equal((await audits('policy.activation_refused')).length, before + 2);
      // ADMIN cannot save either.
      const save = await put(admin, { policy: doc(1), note: 'x' });
      assert.equal(save.statusCode, 403);
    });

    test('a POLICY_AUTHOR\'s activation with a body that is not a valid request is refused and audited too; an anonymous one is not attributed', async () => {
      const count = async () => (await audits('policy.activation_refused')).length;
      const before = await count();
      for (const payload of [{ version: '1' }, { version: 1, x: 1 }]) {
        const res = await post(author, '/activate', payload);
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(res.json().code, 'invalid_request');
        assert.ok(res.json().errors.length > 0, 'the body\'s own field errors');
      }
      const garbled = await svc.app.inject({ method: 'POST', url: url("/activate"), headers: { ...h(author), 'content-type': 'application/json' }, payload: '{"version":' });
      assert.equal(garbled.statusCode, 400, garbled.body);
      assert.equal(garbled.json().code, 'malformed_json');
      const refused = await audits('policy.activation_refused');
      assert.equal(refused.length, before + 3);
      for (const e of refused.slice(-3)) {
        assert.equal(JSON.parse(e.data).reason, 'invalid_request');
        assert.equal(JSON.parse(e.data).principal, author.principalId);
      }
      // A caller without POLICY_AUTHOR is refused for the role, whatever its body.
      const notAuthor = await svc.app.inject({ method: 'POST', url: url('/activate'), headers: { ...h(admin), 'content-type': 'application/json' }, payload: '{"version":' });
      assert.equal(notAuthor.statusCode, 400);
      assert.equal(JSON.parse((await audits('policy.activation_refused')).at(-1)!.data).reason, 'role_missing');
      // Without a credential nobody attempted anything the log could attribute.
      const anonymous = await svc.app.inject({ method: 'POST', url: url("/activate"), headers: { 'content-type': 'application/json' }, payload: '{"version":' });
      assert.equal(anonymous.statusCode, 400);
      assert.equal(await count(), before + 4);
    });

    test('activate: the next getActivePolicy sees it; states move saved -> active -> retired', async () => {
      const res = await post(author, '/activate', { version: 1 });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().previous_version, null);
      const active = await getActivePolicy(svc.ts.store.db, svc.projectId);
      assert.equal(active?.version, 1);
      assert.equal(evaluate(active!.compiled, { agent: AGENT, action: 'pay', amount: { minor: 2000, currency: 'EUR' } }).decision, 'REQUIRE_APPROVAL');
      // Another connection (another instance) sees the same pointer.
      const other = svc.ts.reopen();
      if (backend.name === 'postgres') assert.equal((await getActivePolicy(other.db, svc.projectId))?.version, 1);

      const got = (await svc.app.inject({ method: 'GET', url: url(), headers: h(plain) })).json();
      assert.equal(got.version, 1);
      assert.equal(got.state, 'active');
      assert.deepEqual(got.policy, validatePolicy(doc(1000)).ok ? (validatePolicy(doc(1000)) as { policy: unknown }).policy : null);
      assert.equal(got.hash, res.json().hash);

      const again = await post(author, '/activate', { version: 1 });
      assert.equal(again.statusCode, 409);
      assert.equal(again.json().code, 'already_active');
      const missing = await post(author, '/activate', { version: 99 });
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().code, 'policy_version_not_found');
      const reasons = (await audits('policy.activation_refused')).map((e) => JSON.parse(e.data).reason);
      assert.ok(reasons.includes('already_active') && reasons.includes('version_not_found'));

      const two = await post(author, '/activate', { version: 2 });
      assert.equal(two.statusCode, 200);
      assert.equal(two.json().previous_version, 1);
      const now = await getActivePolicy(svc.ts.store.db, svc.projectId);
      assert.equal(now?.version, 2);
      assert.equal(evaluate(now!.compiled, { agent: AGENT, action: 'pay', amount: { minor: 2000, currency: 'EUR' } }).decision, 'ALLOW');
      assert.equal((await audits('policy.activated')).length, 2);

      const list = (await svc.app.inject({ method: 'GET', url: url('/versions'), headers: h(plain) })).json();
      assert.deepEqual(list.items.map((i: { version: number; state: string }) => [i.version, i.state]), [[2, 'active'], [1, 'retired']]);
      assert.equal(list.items[1].note, 'first');
      assert.equal(list.items[0].created_by, author2.principalId);
    });

    test('concurrent saves get distinct consecutive versions; getActivePolicy compiles each version once', async () => {
      const before = await countVersions();
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => put(i % 2 ? author : author2, { policy: doc(i + 1), note: `c${i}` })));
      const versions = results.map((r) => r.json().version).sort((a: number, b: number) => a - b);
      assert.deepEqual(versions, Array.from({ length: 6 }, (_, i) => before + i + 1));
      const a = await getActivePolicy(svc.ts.store.db, svc.projectId);
      const b = await getActivePolicy(svc.ts.store.db, svc.projectId);
      assert.ok(a && b && a.compiled === b.compiled, 'the compiled evaluator is cached by (project, version, hash)');
    });

    test('versions page newest first with a cursor; a forged cursor is 400', async () => {
      const total = await countVersions();
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const q: string = cursor === null ? '?limit=3' : `?limit=3&cursor=${cursor}`;
        const pageBody: { items: { version: number }[]; next_cursor: string | null } = (await svc.app.inject({ method: 'GET', url: url(`/versions${q}`), headers: h(plain) })).json();
        assert.ok(pageBody.items.length <= 3);
        seen.push(...pageBody.items.map((i) => i.version));
        cursor = pageBody.next_cursor;
      } while (cursor !== null);
      assert.deepEqual(seen, Array.from({ length: total }, (_, i) => total - i));
      for (const bad of ['0', '501', '-1', 'x']) {
        assert.equal((await svc.app.inject({ method: 'GET', url: url(`/versions?limit=${bad}`), headers: h(plain) })).statusCode, 400);
      }
      const forged = await svc.app.inject({ method: 'GET', url: url('/versions?cursor=abc'), headers: h(plain) });
      assert.equal(forged.statusCode, 400);
      assert.equal(forged.json().errors[0].code, 'invalid_cursor');
    });

    test('four-eyes: the saver may not activate; another author may', async () => {
      const sod = (on: boolean) => svc.app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/sod`, headers: h(admin), payload: { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: on } });
      assert.equal((await sod(true)).statusCode, 200);
      try {
        const saved = (await put(author, { policy: doc(42), note: 'four eyes' })).json();
        const own = await post(author, '/activate', { version: saved.version });
        assert.equal(own.statusCode, 403);
        assert.equal(own.json().code, 'four_eyes_required');
        assert.equal(JSON.parse((await audits('policy.activation_refused')).at(-1)!.data).reason, 'four_eyes');
        assert.notEqual((await getActivePolicy(svc.ts.store.db, svc.projectId))?.version, saved.version);
        const other = await post(author2, '/activate', { version: saved.version });
        assert.equal(other.statusCode, 200);
        assert.equal((await getActivePolicy(svc.ts.store.db, svc.projectId))?.version, saved.version);
      } finally {
        assert.equal((await sod(false)).statusCode, 200);
      }
    });

    test('simulate: active or submitted document, no audit event, roles enforced', async () => {
      const count = async () => Number((await svc.ts.store.db.selectFrom('audit_events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
      const before = await count();
      const active = await post(auditor, '/simulate', { request: { agent: AGENT, action: 'pay', amount: { minor: 100, currency: 'EUR' } } });
      assert.equal(active.statusCode, 200, active.body);
      const a = active.json();
      assert.equal(a.policy_decision, 'REQUIRE_APPROVAL'); // active version's limit is 42
      assert.equal(a.policy_reason, 'policy_require_approval');
      assert.equal(typeof a.policy_version, 'number');
      assert.deepEqual(a.matched_rules, ['big-payments']);
      assert.ok(a.steps > 0);
      const submitted = await post(admin, '/simulate', { request: { agent: AGENT, action: 'pay', amount: { minor: 100, currency: 'EUR' } }, policy: doc(500) });
      assert.equal(submitted.json().policy_decision, 'ALLOW');
      assert.equal(submitted.json().policy_version, null);
      const none = await post(author, '/simulate', { request: { agent: AGENT, action: 'read' }, policy: doc(1) });
      assert.equal(none.json().policy_decision, 'DENY');
      assert.equal(none.json().policy_reason, 'no_matching_rule');
      const old = await post(author, '/simulate', { request: { agent: AGENT, action: 'pay', request_time: '2020-01-01T00:00:00Z', amount: { minor: 1, currency: 'EUR' } } });
      assert.equal(old.json().policy_decision, 'ALLOW');
      assert.equal(await count(), before, 'simulation writes no audit event');
      assert.equal((await post(plain, '/simulate', { request: { agent: AGENT } })).statusCode, 403);
    });

    test('simulate refuses a request without agent (agent_required) and malformed members', async () => {
      const res = await post(author, '/simulate', { request: { action: 'pay' } });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'agent_required');
      assert.equal(res.json().errors[0].pointer, '/request/agent');
      const bad = await post(author, '/simulate', { request: { agent: 'bob', resource: 'http://x', request_time: 'yesterday', permit_commitment: 'ABC' } });
      assert.equal(bad.statusCode, 400);
      assert.deepEqual(bad.json().errors.map((e: { pointer: string }) => e.pointer).sort(), ['/request/agent', '/request/permit_commitment', '/request/request_time', '/request/resource']);
      const types = await post(author, '/simulate', { request: { agent: AGENT, amount: { minor: 1.5, currency: 'EUR' }, delegation_depth: '1', extra: 1 } });
      assert.equal(types.statusCode, 400);
      assert.equal(types.json().code, 'invalid_request');
      const badDoc = await post(author, '/simulate', { request: { agent: AGENT }, policy: { spec_version: 1, rules: {} } });
      assert.equal(badDoc.statusCode, 400);
      assert.deepEqual(badDoc.json().errors.map((e: { pointer: string }) => e.pointer).sort(), ['/policy/rules', '/policy/spec_version']);
      assert.equal((await post(author, '/simulate', {})).statusCode, 400);
      // Every error at once: the request's (a missing agent, a member of the wrong type) with the
      // submitted document's.
      const both = await post(author, '/simulate', { request: { action: 'pay' }, policy: { spec_version: 1, rules: {} } });
      assert.equal(both.json().code, 'agent_required');
      assert.deepEqual(both.json().errors.map((e: { pointer: string }) => e.pointer).sort(), ['/policy/rules', '/policy/spec_version', '/request/agent']);
      // A missing agent does not hide the request's other malformed members.
      const noAgent = await post(author, '/simulate', { request: { action: 'a b', resource: 'http://x', request_time: 'yesterday' }, policy: { spec_version: 1, rules: {} } });
      assert.equal(noAgent.json().code, 'agent_required');
      assert.deepEqual(noAgent.json().errors.map((e: { pointer: string }) => e.pointer).sort(),
        ['/policy/rules', '/policy/spec_version', '/request/action', '/request/agent', '/request/request_time', '/request/resource']);
      const noAgentAlone = await post(author, '/simulate', { request: { resource: 'http://x' } });
      assert.equal(noAgentAlone.json().code, 'agent_required');
      assert.deepEqual(noAgentAlone.json().errors.map((e: { pointer: string }) => e.pointer).sort(), ['/request/agent', '/request/resource']);
      const typed = await post(author, '/simulate', { request: { agent: AGENT, delegation_depth: '1' }, policy: { spec_version: 1, rules: {} } });
      assert.equal(typed.json().code, 'invalid_request');
      assert.deepEqual(typed.json().errors.map((e: { pointer: string }) => e.pointer).sort(), ['/policy/rules', '/policy/spec_version', '/request/delegation_depth']);
    });

    test('bad documents create no version and list every error under /policy', async () => {
      const n = await countVersions();
      const cases: [unknown, string[]][] = [
        [[], ['/policy']],
        ['policy', ['/policy']],
        [null, ['/policy']],
        [42, ['/policy']],
        [{ spec_version: '1', rules: [{ id: 'a', effect: 'MAYBE', extra: true, when: { op: 'eq', input: 'risk_score', value: 1 } }] }, ['/policy/rules/0/effect', '/policy/rules/0/extra', '/policy/rules/0/when/input']],
        [{ spec_version: '1', rules: [{ id: 'a', effect: 'ALLOW', when: { op: 'lt', input: 'amount.minor', value: '10', currency: 'EUR' } }] }, ['/policy/rules/0/when/value']],
      ];
      for (const [policy, pointers] of cases) {
        const res = await put(author, { policy, note: 'bad' });
        assert.equal(res.statusCode, 400, JSON.stringify(policy));
        assert.equal(res.json().code, 'invalid_request');
        const got = res.json().errors.map((e: { pointer: string }) => e.pointer);
        for (const p of pointers) assert.ok(got.includes(p), `${JSON.stringify(policy)}: ${got} includes ${p}`);
        for (const e of res.json().errors) assert.ok(typeof e.code === 'string' && typeof e.message === 'string');
      }
      // The body's own errors come with the document's.
      const noted = await put(author, { policy: { spec_version: '2', rules: 'x' }, note: '' });
      assert.equal(noted.statusCode, 400);
      assert.deepEqual(noted.json().errors.map((e: { pointer: string }) => e.pointer).sort(), ['/note', '/policy/rules', '/policy/spec_version']);
      // Deeply nested conditions.
      let when: unknown = { op: 'eq', input: 'action', value: 'pay' };
      for (let i = 0; i < 200; i++) when = { op: 'not', args: [when] };
      const deep = await put(author, { policy: { spec_version: '1', rules: [{ id: 'd', effect: 'ALLOW', when }] }, note: 'deep' });
      assert.equal(deep.statusCode, 400);
      assert.ok(deep.json().errors.some((e: { code: string }) => e.code === 'too_deep'));
      // Deeply nested raw JSON.
      const raw = await svc.app.inject({ method: 'PUT', url: url(), headers: { ...h(author), 'content-type': 'application/json' }, payload: `{"note":"x","policy":${'['.repeat(100_000)}${']'.repeat(100_000)}}` });
      assert.ok(raw.statusCode === 400, `nested JSON gives ${raw.statusCode}`);
      // Too many rules.
      const many = await put(author, { policy: { spec_version: '1', rules: Array.from({ length: 10_001 }, (_, i) => ({ id: `r${i}`, effect: 'DENY' })) }, note: 'many' });
      assert.equal(many.statusCode, 400);
      assert.ok(many.json().errors.some((e: { code: string; pointer: string }) => e.code === 'too_many_rules' && e.pointer === '/policy/rules'));
      // A body past the policy body limit.
      const huge = await svc.app.inject({ method: 'PUT', url: url(), headers: { ...h(author), 'content-type': 'application/json' }, payload: JSON.stringify({ note: 'x', policy: { spec_version: '1', rules: [], pad: 'a'.repeat(9 * 1024 * 1024) } }) });
      assert.equal(huge.statusCode, 413);
      // Envelope errors.
      for (const body of [{ policy: doc(1) }, { policy: doc(1), note: '' }, { policy: doc(1), note: 7 }, { policy: doc(1), note: 'x', extra: 1 }]) {
        const res = await put(author, body);
        assert.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 80));
        assert.equal(res.json().code, 'invalid_request');
      }
      assert.equal(await countVersions(), n, 'no version was created');
    });

    test('activate rejects non-integer versions without activating anything', async () => {
      const active = (await getActivePolicy(svc.ts.store.db, svc.projectId))?.version;
      for (const version of [1.5, '1', null, -1, 0, true, [1], 2 ** 40]) {
        const res = await post(author, '/activate', { version });
        assert.equal(res.statusCode, 400, String(version));
        assert.equal(res.json().code, 'invalid_request');
      }
      assert.equal((await post(author, '/activate', {})).statusCode, 400);
      assert.equal((await post(author, '/activate', { version: 1, extra: 1 })).statusCode, 400);
      assert.equal((await getActivePolicy(svc.ts.store.db, svc.projectId))?.version, active);
    });

    test('replay counts transitions and samples changed decisions', async () => {
      const db = svc.ts.store.db;
      const record = (minor: number, decision: string, reason: string) => insertDecisionEvent(db, svc.projectId, {
        decision_id: newId('dec'), request_id: newId('req'), agent: AGENT, action: 'pay', resource: 'resource://shop/1',
        amount: { minor, currency: 'EUR' }, intent: null, decision, reason_code: reason, detail: null, policy_version: 1, matched_rules: [],
        permit_commitment: null, delegation_depth: 0, request_time: new Date().toISOString(), approval_request_id: null,
      });
      // Under limit 1000: 500 ALLOW, 2000 REQUIRE_APPROVAL. A frozen-agent DENY is not a policy decision.
      for (const [minor, decision, reason] of [[500, 'ALLOW', 'policy_allow'], [500, 'ALLOW', 'policy_allow'], [600, 'ALLOW', 'policy_allow'],
        [2000, 'REQUIRE_APPROVAL', 'policy_require_approval'], [10, 'DENY', 'agent_frozen']] as const) await record(minor, decision, reason);
      // Candidate: limit 100 — the three small payments move ALLOW -> REQUIRE_APPROVAL.
      const res = await post(auditor, '/replay', { policy: doc(100), last: 100 });
      assert.equal(res.statusCode, 200, res.body);
      const r = res.json();
      assert.equal(r.considered, 5);
      assert.equal(r.evaluated, 4);
      assert.equal(r.changed, 3);
      assert.equal(r.unchanged, 1);
      assert.deepEqual(r.transitions, { 'ALLOW->REQUIRE_APPROVAL': 3 });
      assert.deepEqual(r.skipped, { agent_frozen: 1 });
      assert.equal(r.samples.length, 3);
      assert.equal(r.samples[0].old.decision, 'ALLOW');
      assert.equal(r.samples[0].new.decision, 'REQUIRE_APPROVAL');
      assert.equal(r.samples[0].inputs.amount.currency, 'EUR');
      assert.equal(r.candidate.version, null);
      // A saved version as candidate: version 2 (limit 5000) allows everything here.
      const v2 = (await post(admin, '/replay', { version: 2, last: 100 })).json();
      assert.deepEqual(v2.transitions, { 'REQUIRE_APPROVAL->ALLOW': 1 });
      assert.equal(v2.candidate.version, 2);
      // last limits the window (newest first).
      assert.equal((await post(author, '/replay', { version: 2, last: 2 })).json().considered, 2);
      // A time window in the future holds nothing.
      assert.equal((await post(author, '/replay', { version: 2, from: '2999-01-01T00:00:00Z' })).json().considered, 0);
      // A window in any offset selects the rows of its UTC form, and is echoed in that form.
      const at = (await svc.ts.store.db.selectFrom('audit_events').select('created_at').where('kind', '=', 'decision').orderBy('id').execute()).map((e) => e.created_at);
      const mid = Date.parse(at[Math.floor(at.length / 2)]!);
      const utc = { from: new Date(mid).toISOString(), until: new Date(mid + 86_400_000).toISOString() };
      const asUtc = (await post(author, '/replay', { version: 2, ...utc })).json();
      for (const window of [
        { from: withOffset(mid, 60), until: withOffset(mid + 86_400_000, -330) },
        { from: withOffset(mid, 0).replace('+00:00', '-00:00'), until: withOffset(mid + 86_400_000, 840) },
      ]) {
        const r = (await post(author, '/replay', { version: 2, ...window })).json();
        assert.deepEqual(r.window, { ...utc, last: 1000 }, JSON.stringify(window));
        assert.deepEqual([r.considered, r.samples], [asUtc.considered, asUtc.samples], JSON.stringify(window));
      }
      assert.ok(asUtc.considered > 0 && asUtc.considered < at.length, 'the window cuts the recorded decisions');
    });

    test('replay decides approved requests again: an approval grants no authority, so a candidate that denies them changes them', async () => {
      const db = svc.ts.store.db;
      await insertDecisionEvent(db, svc.projectId, {
        decision_id: newId('dec'), request_id: newId('req'), agent: AGENT, action: 'pay', resource: 'resource://shop/approved',
        amount: { minor: 2000, currency: 'EUR' }, intent: null, decision: 'ALLOW', reason_code: 'approval_granted', detail: null, policy_version: 1, matched_rules: [],
        permit_commitment: null, delegation_depth: 0, request_time: new Date().toISOString(), approval_request_id: newId('apr'),
      });
      const replay = async (effect: string) => (await post(auditor, '/replay', { policy: { spec_version: '1', rules: [{ id: 'all', effect }] }, last: 1 })).json();
      const denied = await replay('DENY');
      assert.equal(denied.considered, 1);
      assert.deepEqual(denied.skipped, {});
      assert.deepEqual(denied.transitions, { 'ALLOW->DENY': 1 });
      assert.equal(denied.samples[0].old.reason_code, 'approval_granted');
      for (const effect of ['REQUIRE_APPROVAL', 'ALLOW']) {
        const r = await replay(effect);
        assert.deepEqual([r.evaluated, r.unchanged, r.changed], [1, 1, 0], `${effect}: the approval given stands`);
      }
    });

    test('replay bad input', async () => {
      const cases: [unknown, number, string][] = [
        [{}, 400, 'invalid_request'],
        [{ version: 1, policy: doc(1) }, 400, 'invalid_request'],
        [{ version: 1.5 }, 400, 'invalid_request'],
        [{ version: 1, last: 10_001 }, 400, 'invalid_request'],
        [{ version: 1, last: 0 }, 400, 'invalid_request'],
        [{ version: 1, from: 'yesterday' }, 400, 'invalid_request'],
        [{ version: 1, from: '2025-01-01T00:00:00.123456Z' }, 400, 'invalid_request'],
        [{ version: 1, from: '2025-01-02T00:00:00Z', until: '2025-01-01T00:00:00Z' }, 400, 'invalid_request'],
        [{ version: 999 }, 404, 'policy_version_not_found'],
        [{ policy: { rules: 'x' } }, 400, 'invalid_request'],
      ];
      for (const [body, status, code] of cases) {
        const res = await post(author, '/replay', body);
        assert.equal(res.statusCode, status, JSON.stringify(body));
        assert.equal(res.json().code, code);
      }
      assert.equal((await post(plain, '/replay', { version: 1 })).statusCode, 403);
      // Every error at once: a submitted document's errors beside the body's schema and window errors.
      const bad = { spec_version: '1', rules: [{ id: 'r', effect: 'MAYBE' }] };
      for (const [body, expected] of [
        [{ policy: bad, last: 0 }, ['/last too_small', '/policy/rules/0/effect invalid_effect']],
        [{ policy: bad, from: '2025-01-01t00:00:00z' }, ['/from bad_format', '/policy/rules/0/effect invalid_effect']],
        [{ policy: bad, from: '2025-01-01T00:00:00.0001Z' }, ['/from invalid_timestamp', '/policy/rules/0/effect invalid_effect']],
      ] as const) {
        const res = await post(author, '/replay', body);
        assert.equal(res.statusCode, 400, JSON.stringify(body));
        assert.deepEqual(res.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`).sort(), expected, JSON.stringify(body));
      }
    });
  });
}
