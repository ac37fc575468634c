// Executions end to end against a real merchant on loopback: one call per nonce (also under 100
// concurrent identical requests), classification, REPLAY, in-flight conflicts, nonce reuse,
// refusals before any decision, paging, and resolution races (invariants 2, 6, 7).
import { test, describe, before, after, mock } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startPayments, stopBoth } from '../support/payments.ts';
import { type TestService } from '../support/service.ts';
import { issue, newAgent, type Agent } from '../support/authorize.ts';
import { consoleMember } from '../support/console.ts';
import { type TestMerchant } from '../support/merchant.ts';
import { recordedDecisions } from '../support/decisions.ts';

const PAY = { actions: ['pay', 'read'], resources: ['resource://shop/*', 'resource://docs/*'] };

for (const backend of backends()) {
  describe(`executions on ${backend.name}`, () => {
    let svc: TestService;
    let merchant: TestMerchant;
    let key: { authorization: string };
    /** A key carrying ADMIN held by a person: only a person resolves an UNKNOWN (invariant 6), with the console's role (decision 0403). */
    let personKey: { authorization: string };
    let agent: Agent;
    let permit: string;
    const authorize = (body: Record<string, unknown>) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body });
    // A hang goes to the merchant waited for briefly (merchantsFile), so the test does not wait long for it.
    const pay = (operation: string, nonce: string, over: Record<string, unknown> = {}, payload: Record<string, unknown> = { order: 'o-1' }) => authorize({
      agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' },
      execution: { merchant: operation === 'hang' ? 'short_timeout' : 'shop', operation, payload, nonce }, ...over,
    });
    const count = async (table: 'decisions' | 'executions') => table === 'decisions'
      ? (await recordedDecisions(svc.ts.store.db)).length
      : Number((await svc.ts.store.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const row = (id: string) => svc.ts.store.db.selectFrom('executions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    before(async () => {
      ({ svc, merchant, key, agent, permit } = await startPayments(backend, PAY));
      personKey = { authorization: `Bearer ${(await svc.member(['ADMIN'], undefined, 'person')).key}` };
    });
    after(() => stopBoth(svc, merchant));

    test('ALLOW with execution: one signed call with the nonce as Idempotency-Key; SUCCEEDED; the same nonce is REPLAY without a call', async () => {
      const nonce = randomUUID();
      const res = await pay('ok', nonce);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.equal(body.decision, 'ALLOW');
      assert.match(body.execution.id, /^exe_/);
      assert.equal(body.execution.status, 'SUCCEEDED');
      assert.deepEqual(Object.keys(body.execution).sort(), ['id', 'status']);
      assert.equal(merchant.calls.get(nonce), 1);
      assert.deepEqual(merchant.bodies.get(nonce), { order: 'o-1' });
      assert.equal(merchant.badSignatures, 0);
      const stored = await row(body.execution.id);
      assert.equal(stored.status, 'SUCCEEDED');
      assert.equal(stored.http_status, 200);
      assert.equal(stored.decision_audit_id, body.audit_id, 'the execution names the audit event of the decision that allowed it');
      const kinds = (await svc.ts.store.db.selectFrom('audit_events').select('kind').where('data', 'like', `%${body.execution.id}%`).execute()).map((e) => e.kind).sort();
      assert.deepEqual(kinds, ['execution.outcome', 'execution.started']);

      const decisionsBefore = await count('decisions');
      const again = await pay('ok', nonce);
      assert.equal(again.statusCode, 200, again.body);
      const replay = again.json();
      assert.equal(replay.decision, 'REPLAY');
      assert.equal(replay.reason_code, 'replay');
      assert.equal(replay.policy_version, body.policy_version);
      assert.deepEqual(replay.execution, body.execution);
      assert.notEqual(replay.audit_id, body.audit_id);
      const event = await svc.ts.store.db.selectFrom('audit_events').selectAll().where('id', '=', replay.audit_id).executeTakeFirstOrThrow();
      assert.equal(event.kind, 'execution.replay');
      assert.equal(JSON.parse(event.data).decision_id, stored.decision_id, 'the replay names the decision whose call it replays');
      assert.equal(merchant.calls.get(nonce), 1, 'no second merchant call');
      assert.equal(await count('decisions'), decisionsBefore, 'no new decision');
    });

    test('a repeat is REPLAY even once its merchant has left the configuration; a new nonce for it is 422', async () => {
      const nonce = randomUUID();
      const first = (await pay('ok', nonce)).json();
      assert.equal(first.execution.status, 'SUCCEEDED');
      const configured = svc.deps.executions;
      const { Executions } = await import('../../src/services/executions/executions.ts');
      const { MerchantRegistry } = await import('../../src/merchants/config.ts');
      (svc.deps as { executions: unknown }).executions = new Executions({ store: svc.ts.store, writer: svc.deps.writer, merchants: new MerchantRegistry(), instanceId: configured.instanceId, now: () => new Date() });
      try {
        const again = await pay('ok', nonce);
        assert.equal(again.statusCode, 200, again.body);
        assert.deepEqual([again.json().decision, again.json().execution], ['REPLAY', first.execution]);
        const fresh = await pay('ok', randomUUID());
        assert.equal(fresh.statusCode, 422);
        assert.equal(fresh.json().code, 'unknown_merchant');
        // No merchant at all: the server was started without its file, and the answer says where they come from.
        assert.match(fresh.json().detail, /is configured in this deployment: none is \(a server reads its merchants at start from the file GAVEL_MERCHANTS_FILE names/);
      } finally { (svc.deps as { executions: unknown }).executions = configured; }
      assert.equal(merchant.calls.get(nonce), 1);
    });

    test('a replay spends no budget: a one-use permit replays after its use is spent', async () => {
      const a = newAgent();
      const one = (await issue(svc, a.did, { ...PAY, max_uses: 1 } as never)).jws;
      const nonce = randomUUID();
      const body = { agent: a.did, permit: one, action: 'read', resource: 'resource://docs/a', execution: { merchant: 'shop', operation: 'ok', payload: {}, nonce } };
      const first = (await authorize(body)).json();
      assert.equal(first.decision, 'ALLOW', JSON.stringify(first));
      for (let i = 0; i < 3; i++) assert.equal((await authorize(body)).json().decision, 'REPLAY');
      const other = (await authorize({ ...body, execution: { ...body.execution, nonce: randomUUID() } })).json();
      assert.equal(other.decision, 'DENY', 'the single use was spent once, by the first call only');
      assert.match(other.detail, /uses_exhausted/);
      assert.ok(!('execution' in other));
    });

    for (const [operation, status, note] of [
      ['refuse', 'FAILED', /402/], ['fail', 'UNKNOWN', /500/], ['hang', 'UNKNOWN', /no answer within/], ['reset', 'UNKNOWN', /may have been sent/], ['redirect', 'UNKNOWN', /302/],
    ] as const) {
      test(`merchant ${operation}: ${status}, replayed as ${status}, never called again`, async () => {
        const nonce = randomUUID();
        const res = await pay(operation, nonce);
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assert.equal(body.decision, 'ALLOW');
        assert.equal(body.execution.status, status);
        assert.match((await row(body.execution.id)).note ?? '', note);
        const again = (await pay(operation, nonce)).json();
        assert.equal(again.decision, 'REPLAY');
        assert.deepEqual(again.execution, body.execution);
        assert.equal(merchant.calls.get(nonce), 1);
        if (operation === 'redirect') assert.equal(merchant.calls.size > 0, true);
      });
    }

    test('100 concurrent identical requests: one merchant call; the others execution_in_progress or REPLAY', async () => {
      const nonce = randomUUID();
      const decisionsBefore = await count('decisions');
      const results = await Promise.all(Array.from({ length: 100 }, () => pay('slow', nonce)));
      const allows = results.filter((r) => r.statusCode === 200 && r.json().decision === 'ALLOW');
      assert.equal(allows.length, 1, results.map((r) => r.body).slice(0, 3).join('\n'));
      for (const r of results) {
        if (r === allows[0]) continue;
        const ok = (r.statusCode === 409 && r.json().code === 'execution_in_progress') || (r.statusCode === 200 && r.json().decision === 'REPLAY');
        assert.ok(ok, `${r.statusCode} ${r.body}`);
      }
      assert.equal(merchant.calls.get(nonce), 1);
      assert.equal(await count('decisions') - decisionsBefore, 1, 'the losers left no decision');
      const rows = await svc.ts.store.db.selectFrom('executions').selectAll().where('nonce', '=', nonce).execute();
      assert.equal(rows.length, 1);
    });

    test('the same nonce while in flight: 409 execution_in_progress; with another payload or action: 409 nonce_reused', async () => {
      const nonce = randomUUID();
      const first = pay('slow', nonce);
      await merchant.waitForCalls(merchant.totalCalls() + 1);
      const during = await pay('slow', nonce);
      assert.equal(during.statusCode, 409, during.body);
      assert.equal(during.json().code, 'execution_in_progress');
      // Nor can a person resolve it meanwhile: it has no outcome yet, and the detail says so.
      const inFlight = await svc.ts.store.db.selectFrom('executions').select('id').where('nonce', '=', nonce).executeTakeFirstOrThrow();
      const early = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/executions/resolve`, headers: personKey, payload: { execution_id: inFlight.id, outcome: 'FAILED', note: 'looked' } });
      assert.equal(early.statusCode, 409, early.body);
      assert.equal(early.json().code, 'execution_not_unknown');
      assert.match(early.json().detail, /is IN_FLIGHT \(the merchant call is still in progress/);
      assert.equal((await first).json().execution.status, 'SUCCEEDED');
      for (const res of [await pay('slow', nonce, {}, { order: 'other' }), await pay('slow', nonce, { resource: 'resource://shop/2' }), await pay('ok', nonce)]) {
        assert.equal(res.statusCode, 409, res.body);
        assert.equal(res.json().code, 'nonce_reused');
      }
      assert.equal(merchant.calls.get(nonce), 1);
    });

    test('url in execution, unknown merchant or operation: refused by name, no decision recorded', async () => {
      const before = await count('decisions');
      const url = await authorize({ agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 5, currency: 'EUR' },
        execution: { merchant: 'shop', operation: 'ok', payload: {}, nonce: randomUUID(), url: 'http://169.254.169.254/' } });
      assert.equal(url.statusCode, 400);
      assert.equal(url.json().code, 'execution_url_not_allowed');
      // "a `url` anywhere in `execution` is refused by name" (executions issue): in the payload too, at any depth.
      // The pointer escapes "/" and "~" in member names (RFC 6901).
      for (const [payload, pointer] of [[{ url: 'http://x/' }, '/execution/payload/url'], [{ a: [{ b: { url: 'http://x/' } }] }, '/execution/payload/a/0/b/url'],
        [{ 'a/b': { 'c~d': { url: 'http://x/' } } }, '/execution/payload/a~1b/c~0d/url'],
        // By name in any case of its letters: a merchant reading names loosely would take `URL` as `url`.
        [{ URL: 'http://x/' }, '/execution/payload/URL'], [{ a: { Url: 'http://x/' } }, '/execution/payload/a/Url']] as const) {
        const nonce = randomUUID();
        const deep = await pay('ok', nonce, {}, payload);
        assert.equal(deep.statusCode, 400, deep.body);
        assert.equal(deep.json().code, 'execution_url_not_allowed');
        assert.deepEqual(deep.json().errors.map((e: { pointer: string }) => e.pointer), [pointer]);
        assert.equal(merchant.calls.get(nonce), undefined);
      }
      const m = await pay('ok', randomUUID(), { execution: { merchant: 'nope', operation: 'ok', payload: {}, nonce: randomUUID() } });
      assert.equal(m.statusCode, 422);
      assert.equal(m.json().code, 'unknown_merchant');
      assert.equal(m.json().detail, 'no merchant named "nope" is configured in this deployment', 'others are: a misspelt name');
      const o = await pay('ok', randomUUID(), { execution: { merchant: 'other', operation: 'refuse', payload: {}, nonce: randomUUID() } });
      assert.equal(o.statusCode, 422);
      assert.equal(o.json().code, 'unknown_operation');
      assert.equal(await count('decisions'), before);
    });

    test('DENY and REQUIRE_APPROVAL carry no execution, call nothing, and leave the nonce free', async () => {
      const nonce = randomUUID();
      const execs = await count('executions');
      const deny = (await pay('ok', nonce, { action: 'read', resource: 'resource://docs/secret/x', amount: undefined })).json();
      assert.equal(deny.decision, 'DENY');
      assert.ok(!('execution' in deny));
      const approval = (await pay('ok', nonce, { amount: { minor: 50_000, currency: 'EUR' } })).json();
      assert.equal(approval.decision, 'REQUIRE_APPROVAL');
      assert.ok(!('execution' in approval));
      assert.equal(await count('executions'), execs);
      assert.equal(merchant.calls.get(nonce), undefined);
      const allow = (await pay('ok', nonce)).json();
      assert.equal(allow.decision, 'ALLOW');
      assert.equal(allow.execution.status, 'SUCCEEDED');
      // Each decision's audit event names the call it was asked for, refused or run.
      for (const d of [deny, approval, allow]) {
        const event = await svc.ts.store.db.selectFrom('audit_events').select('data').where('id', '=', d.audit_id).executeTakeFirstOrThrow();
        assert.deepEqual(JSON.parse(event.data).execution, { merchant: 'shop', nonce, operation: 'ok' }, d.decision);
      }
    });

    test('list: newest first, paged by cursor, on both planes', async () => {
      const a = newAgent();
      const p = (await issue(svc, a.did, PAY)).jws;
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = (await authorize({ agent: a.did, permit: p, action: 'read', resource: 'resource://docs/a', execution: { merchant: 'shop', operation: 'ok', payload: { i }, nonce: randomUUID() } })).json();
        ids.push(r.execution.id);
      }
      const seen: { id: string; status: string; agent: string; operation: string; created_at: string }[] = [];
      let cursor: string | null = null;
      do {
        const res: Awaited<ReturnType<typeof svc.app.inject>> = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/executions?limit=2${cursor ? `&cursor=${cursor}` : ''}`, headers: key });
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assert.ok(body.executions.length <= 2);
        seen.push(...body.executions);
        cursor = body.next_cursor;
      } while (cursor);
      const sorted = [...seen].sort((x, y) => (x.id < y.id ? 1 : -1));
      assert.deepEqual(seen.map((e) => e.id), sorted.map((e) => e.id), 'newest first');
      assert.deepEqual(seen.filter((e) => ids.includes(e.id)).map((e) => e.id), [...ids].reverse());
      const mine = seen.find((e) => e.id === ids[0])!;
      assert.deepEqual(Object.keys(mine).sort(), ['agent', 'created_at', 'id', 'operation', 'status']);
      assert.equal(mine.agent, a.did);
      assert.equal(mine.operation, 'ok');
      const auditor = await consoleMember(svc, ['AUDITOR']);
      const c = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/executions?limit=500`, headers: auditor.get });
      assert.equal(c.statusCode, 200, c.body);
      assert.deepEqual(c.json().executions.map((e: { id: string }) => e.id), seen.map((e) => e.id));
      // Filtered by status, on both planes: what waits for a person, without paging through the rest.
      for (const status of ['UNKNOWN', 'SUCCEEDED']) {
        const want = seen.filter((e) => e.status === status).map((e) => e.id);
        const m = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/executions?limit=500&status=${status}`, headers: key });
        const cs = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/executions?limit=500&status=${status}`, headers: auditor.get });
        assert.deepEqual(m.json().executions.map((e: { id: string }) => e.id), want, status);
        assert.deepEqual(cs.json().executions.map((e: { id: string }) => e.id), want, status);
      }
      assert.ok(seen.some((e) => e.status === 'UNKNOWN') && seen.some((e) => e.status === 'SUCCEEDED'), 'both statuses were listed');
      const bad = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/executions?status=unknown`, headers: key });
      assert.equal(bad.statusCode, 400);
      assert.deepEqual(bad.json().errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]), [['/status', 'not_allowed']]);
    });

    test('the audit list, newest first by id, shows each execution starting after the decision that allowed it', async () => {
      // Both events are written in one transaction, usually in one millisecond: ids minted in order
      // (newMonotonicId), not with random low bits that listed them either way.
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        const res = (await pay('ok', randomUUID())).json();
        assert.equal(res.decision, 'ALLOW');
        ids.push(res.execution.id);
      }
      const events = await svc.ts.store.db.selectFrom('audit_events').select(['id', 'kind', 'data']).where('project_id', '=', svc.projectId)
        .where('kind', 'in', ['decision', 'execution.started']).orderBy('id', 'desc').execute();
      for (const executionId of ids) {
        const started = events.findIndex((e) => e.kind === 'execution.started' && e.data.includes(executionId));
        const decisionId = JSON.parse(events[started]!.data).decision_id as string;
        const decision = events.findIndex((e) => e.kind === 'decision' && e.data.includes(decisionId));
        assert.ok(started >= 0 && decision > started, `execution ${executionId}: started listed at ${started}, its decision at ${decision}`);
      }
    });

    test('executions made within one millisecond list newest first in the order they were made', async () => {
      // The list is ordered by id; ids minted with random low bits listed a millisecond's
      // executions either way. The clock held still makes every one of them share it.
      const frozen = Date.now();
      const clock = mock.method(Date, 'now', () => frozen);
      const made: string[] = [];
      try {
        for (let i = 0; i < 8; i++) {
          const res = (await pay('ok', randomUUID())).json();
          assert.equal(res.execution.status, 'SUCCEEDED', JSON.stringify(res));
          made.push(res.execution.id);
        }
      } finally { clock.mock.restore(); }
      const listed = (await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/executions?limit=500`, headers: key })).json().executions
        .map((e: { id: string }) => e.id).filter((id: string) => made.includes(id));
      assert.deepEqual(listed, [...made].reverse());
    });

    test('concurrent executions list newest first by created_at too, as each item states it', async () => {
      // The id was minted after the first nonce read, created_at when the request was taken up:
      // reads answered out of order (PostgreSQL's pool) listed an item before one it was created after.
      const made = (await Promise.all(Array.from({ length: 40 }, () => pay('ok', randomUUID())))).map((r) => r.json().execution.id as string);
      const listed: { id: string; created_at: string }[] = (await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/executions?limit=500`, headers: key }))
        .json().executions.filter((e: { id: string }) => made.includes(e.id));
      assert.equal(listed.length, made.length);
      const times = listed.map((e) => e.created_at);
      assert.deepEqual(times, [...times].sort().reverse(), 'created_at never rises down the list');
    });

    test('resolve: only UNKNOWN; the first of racing resolvers stands; every other gets conflict, however late', async () => {
      const unknown = (await pay('fail', randomUUID())).json().execution;
      assert.equal(unknown.status, 'UNKNOWN');
      const resolve = (body: Record<string, unknown>, headers = personKey) => svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/executions/resolve`, headers, payload: body });
      // A service principal's key may find out, but not settle it: 403 person_required, nothing
      // written; nor may a person's key without ADMIN (the console's role for the same statement).
      const software = { authorization: `Bearer ${(await svc.member(['ADMIN'])).key}` };
      const bySoftware = await resolve({ execution_id: unknown.id, outcome: 'FAILED', note: 'the reconciler saw no charge' }, software);
      assert.equal(bySoftware.statusCode, 403, bySoftware.body);
      assert.equal(bySoftware.json().code, 'person_required');
      const byMember = await resolve({ execution_id: unknown.id, outcome: 'FAILED', note: 'trust me' }, { authorization: `Bearer ${(await svc.member(['AUDITOR'], undefined, 'person')).key}` });
      assert.equal(byMember.json().code, 'forbidden', byMember.body);
      assert.equal((await row(unknown.id)).status, 'UNKNOWN');
      const racers = await Promise.all(Array.from({ length: 10 }, (_, i) => resolve({ execution_id: unknown.id, outcome: i % 2 ? 'FAILED' : 'SUCCEEDED', note: `checked the ledger (${i})` })));
      const winners = racers.filter((r) => r.statusCode === 200);
      assert.equal(winners.length, 1, racers.map((r) => r.body).join('\n'));
      for (const r of racers) if (r !== winners[0]) {
        assert.equal(r.statusCode, 409, r.body);
        assert.equal(r.json().code, 'conflict', r.body);
      }
      const won = winners[0]!.json();
      const stored = await row(unknown.id);
      assert.equal(stored.status, won.status);
      assert.equal(stored.resolution_note, won.note);
      assert.match(stored.resolved_by ?? '', /^key_/);
      const audit = await svc.ts.store.db.selectFrom('audit_events').selectAll().where('kind', '=', 'execution.resolved').where('data', 'like', `%${unknown.id}%`).execute();
      assert.equal(audit.length, 1);
      // Later: another resolver was still first (spec section 3), not an outcome from the merchant.
      const late = await resolve({ execution_id: unknown.id, outcome: 'FAILED', note: 'again' });
      assert.equal(late.statusCode, 409);
      assert.equal(late.json().code, 'conflict');
      assert.equal(late.json().execution_status, won.status);
      // A replay now returns the resolved outcome.
      // A merchant outcome cannot be resolved.
      const ok = (await pay('ok', randomUUID())).json().execution;
      const r2 = await resolve({ execution_id: ok.id, outcome: 'FAILED', note: 'I think it failed' });
      assert.equal(r2.statusCode, 409);
      assert.equal(r2.json().code, 'execution_not_unknown');
      assert.equal((await row(ok.id)).status, 'SUCCEEDED');
      const missing = await resolve({ execution_id: 'exe_00000000000000000000000000', outcome: 'FAILED', note: 'x' });
      assert.equal(missing.statusCode, 404);
      // An outcome that is not one of the two is reported once, naming both.
      const maybe = await resolve({ execution_id: ok.id, outcome: 'MAYBE', note: 'x' });
      assert.equal(maybe.statusCode, 400);
      assert.deepEqual(maybe.json().errors.map((e: { pointer: string; code: string; message: string }) => [e.pointer, e.code, e.message]), [['/outcome', 'not_allowed', 'must be one of "SUCCEEDED", "FAILED"']]);
      for (const note of ['', '   ', '\n\t', '\u200b\u00a0', '\u2060\ufeff', '\u3164\u115f', '\uffa0\u2800']) {
        const blank = await resolve({ execution_id: ok.id, outcome: 'FAILED', note });
        assert.equal(blank.statusCode, 400, JSON.stringify(note));
        assert.deepEqual(blank.json().errors.map((e: { pointer: string }) => e.pointer), ['/note']);
      }
    });

    test('console resolve (ADMIN): records who, when and the note', async () => {
      const nonce = randomUUID();
      const unknown = (await pay('hang', nonce)).json().execution;
      assert.equal(unknown.status, 'UNKNOWN');
      const admin = await consoleMember(svc, ['ADMIN']);
      const res = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/executions/${unknown.id}/resolve`, headers: admin.post, payload: { outcome: 'FAILED', note: 'merchant support confirmed no charge' } });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().resolved_by, admin.principalId);
      // The issue's body {execution_id, outcome, note} is taken on the console route too; another id is refused.
      const other = (await pay('hang', randomUUID())).json().execution;
      const path = `/v1/console/projects/${svc.projectId}/executions/${other.id}/resolve`;
      const mismatch = await svc.app.inject({ method: 'POST', url: path, headers: admin.post, payload: { execution_id: unknown.id, outcome: 'FAILED', note: 'checked' } });
      assert.equal(mismatch.statusCode, 400, mismatch.body);
      assert.deepEqual(mismatch.json().errors.map((e: { pointer: string }) => e.pointer), ['/execution_id']);
      const withId = await svc.app.inject({ method: 'POST', url: path, headers: admin.post, payload: { execution_id: other.id, outcome: 'SUCCEEDED', note: 'checked' } });
      assert.equal(withId.statusCode, 200, withId.body);
      const replay = (await pay('hang', nonce)).json();
      assert.equal(replay.decision, 'REPLAY');
      assert.equal(replay.execution.status, 'FAILED');
      assert.equal(merchant.calls.get(nonce), 1);
    });
  });
}
