// Money at its bounds, end to end on both engines: the largest amount the API accepts (2^53 - 1)
// spent to the last minor unit through a delegated chain whose ancestors spend too (decision 0301),
// one unit more refused as a decision (never a 500, never a wrapped counter), amounts in every
// spelling JSON allows, and the views that carry money or counts reading back exact JSON numbers,
// not the strings PostgreSQL's bigint arrives as.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { activatePolicy, decide, delegate, issue, newAgent } from '../support/authorize.ts';
import { newApprover } from '../support/approvals.ts';
import { recordedDecision } from '../support/decisions.ts';
import { permitCommitment } from '../../src/domain/permit/index.ts';
import { databaseUrl, spawnGavel } from '../support/process.ts';

const MAX = Number.MAX_SAFE_INTEGER;
const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };
const eur = (minor: number) => ({ minor, currency: 'EUR' });
/** ALLOW up to 2^53 - 2 minor units; exactly 2^53 - 1 asks a person. */
const POLICY = { spec_version: '1', rules: [
  { id: 'pay', effect: 'ALLOW', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'pay' }, { op: 'lt', input: 'amount.minor', value: MAX, currency: 'EUR' }] } },
  { id: 'pay-all', effect: 'REQUIRE_APPROVAL', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'pay' }, { op: 'eq', input: 'amount.minor', value: MAX, currency: 'EUR' }] } },
] };

for (const backend of backends()) {
  describe(`money at its bounds on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    let auditor: ConsoleMember;
    const usage = async (commitment: string) => {
      const res = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/permits/${commitment}`, headers: auditor.get });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().usage as { uses: number; spent_minor: number; currency: string | null };
    };

    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
      auditor = await consoleMember(svc, ['AUDITOR']);
      await activatePolicy(svc, POLICY);
    });
    after(async () => { await svc.stop(); });

    test('a budget of 2^53-1 is spent to the last unit through a delegate and its root; one unit more is DENY, and the views read exact numbers', async () => {
      const holder = newAgent();
      const child = newAgent();
      const root = await issue(svc, holder.did, { ...PAY, budget: eur(MAX), max_per_request: eur(MAX), max_uses: MAX });
      const chain = await delegate(root.jws, holder, child.did, { ...PAY, budget: eur(MAX), max_per_request: eur(MAX), max_uses: MAX });
      const leaf = permitCommitment(chain.split('~').at(-1)!);
      const pay = (minor: number, asRoot = false) => decide(svc, key, {
        agent: asRoot ? holder.did : child.did, permit: asRoot ? root.jws : chain, action: 'pay', resource: 'resource://shop/1', amount: eur(minor),
      });
      assert.equal((await pay(MAX - 10)).decision, 'ALLOW');
      // The root's own spend and the delegate's share one budget: 10 units are left of it.
      assert.equal((await pay(9, true)).decision, 'ALLOW');
      // Through the delegate it is the root that refuses, and the detail says so: the delegate's own
      // link has budget left, as its view shows.
      const byDelegate = await pay(2);
      assert.equal(byDelegate.decision, 'DENY');
      assert.match(byDelegate.detail ?? '', /^budget_exhausted: the root permit \(link 0\) of the chain has not enough budget left /);
      const byRoot = await pay(2, true);
      assert.match(byRoot.detail ?? '', /^budget_exhausted: the permit has not enough budget left /);
      assert.equal((await pay(1)).decision, 'ALLOW', 'the last unit');
      assert.equal((await pay(0)).decision, 'ALLOW', 'nothing, from a budget spent out');
      const last = await pay(1);
      assert.deepEqual([last.decision, last.detail?.split(':')[0]], ['DENY', 'budget_exhausted']);
      assert.deepEqual(await usage(root.commitment), { uses: 4, spent_minor: MAX, currency: 'EUR' });
      assert.deepEqual(await usage(leaf), { uses: 3, spent_minor: MAX - 9, currency: 'EUR' });
      const listed = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/permits?agent=${encodeURIComponent(holder.did)}`, headers: auditor.get });
      assert.deepEqual(listed.json().permits.map((p: { usage: unknown }) => p.usage), [{ uses: 4, spent_minor: MAX, currency: 'EUR' }]);
      assert.match(listed.body, /"spent_minor":9007199254740991[,}]/, 'a JSON number, written exactly');
      const event = await recordedDecision(svc.ts.store.db, last.audit_id);
      assert.deepEqual(event.amount, eur(1));
    });

    test('amounts in every spelling JSON allows read as the same integer; a string, 2^53 or a lowercase currency is refused before any decision and spends nothing', async () => {
      const agent = newAgent();
      const permit = await issue(svc, agent.did, { ...PAY, max_per_request: eur(1000), budget: eur(3000) });
      const body = (amount: string) => `{"agent":"${agent.did}","permit":"${permit.jws}","action":"pay","resource":"resource://shop/1","amount":${amount}}`;
      const send = (amount: string) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { ...key, 'content-type': 'application/json' }, payload: body(amount) });
      for (const [amount, code] of [
        ['{"minor":"100","currency":"EUR"}', 'wrong_type'],
        ['{"minor":9007199254740992,"currency":"EUR"}', 'inexact_number'],
        ['{"minor":99999999999999999999999999,"currency":"EUR"}', 'inexact_number'],
        ['{"minor":100.5,"currency":"EUR"}', 'wrong_type'],
        ['{"minor":-1,"currency":"EUR"}', 'too_small'],
        ['{"minor":100,"currency":"eur"}', 'bad_format'],
      ] as const) {
        const res = await send(amount);
        assert.equal(res.statusCode, 400, `${amount}: ${res.body}`);
        assert.deepEqual(res.json().errors.map((e: { pointer: string; code: string }) => [e.pointer.split('/').slice(0, 2).join('/'), e.code]), [['/amount', code]], amount);
      }
      // 1e3 and 1000.0 are 1000, the per-request limit itself; -0 is 0.
      for (const amount of ['{"minor":1e3,"currency":"EUR"}', '{"minor":1000.0,"currency":"EUR"}', '{"minor":-0,"currency":"EUR"}']) {
        const res = await send(amount);
        assert.equal(res.json().decision, 'ALLOW', `${amount}: ${res.body}`);
        const event = await recordedDecision(svc.ts.store.db, res.json().audit_id);
        assert.ok(Object.is(event.amount?.minor, amount.includes('-0') ? 0 : 1000), `${amount} recorded as ${JSON.stringify(event.amount)}`);
      }
      const over = (await send('{"minor":1001,"currency":"EUR"}')).json();
      assert.deepEqual([over.decision, over.detail?.split(':')[0]], ['DENY', 'amount_exceeds_per_request']);
      const usd = (await send('{"minor":1,"currency":"USD"}')).json();
      assert.deepEqual([usd.decision, usd.detail?.split(':')[0]], ['DENY', 'currency_mismatch']);
      assert.deepEqual(await usage(permit.commitment), { uses: 3, spent_minor: 2000, currency: 'EUR' });
      // 1000 left: exactly that is the last ALLOW.
      assert.equal((await send('{"minor":1000,"currency":"EUR"}')).json().decision, 'ALLOW');
      const out = (await send('{"minor":1,"currency":"EUR"}')).json();
      assert.deepEqual([out.decision, out.detail?.split(':')[0]], ['DENY', 'budget_exhausted']);
      assert.deepEqual(await usage(permit.commitment), { uses: 4, spent_minor: 3000, currency: 'EUR' });
    });

    test('a delegated limit written as a non-integer that reads as an integer is refused, not rounded to the limit it is not', async () => {
      const holder = newAgent();
      const child = newAgent();
      const root = await issue(svc, holder.did, { ...PAY, budget: eur(5000) });
      const honest = (await delegate(root.jws, holder, child.did, { ...PAY, budget: eur(4999) })).split('~')[1]!;
      // 4999.99999999999999 is below 5000, but a double reads it as 5000: the link would then
      // spend the whole of its parent's budget, more than its delegator signed.
      const text = Buffer.from(honest.split('.')[1]!, 'base64url').toString('utf8').replace('"minor":4999', '"minor":4999.99999999999999');
      assert.notEqual(text, Buffer.from(honest.split('.')[1]!, 'base64url').toString('utf8'));
      const signingInput = `${honest.split('.')[0]}.${Buffer.from(text).toString('base64url')}`;
      const link = `${signingInput}.${Buffer.from(await holder.sign(new TextEncoder().encode(signingInput))).toString('base64url')}`;
      const d = await decide(svc, key, { agent: child.did, permit: `${root.jws}~${link}`, action: 'pay', resource: 'resource://shop/1', amount: eur(5000) });
      assert.deepEqual([d.decision, d.detail?.split(':')[0]], ['DENY', 'claims'], JSON.stringify(d));
      assert.deepEqual(await usage(root.commitment), { uses: 0, spent_minor: 0, currency: 'EUR' });
    });

    test('issuance refuses limits in two currencies, which no amount could satisfy both of, and signs nothing', async () => {
      const issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
      const agent = newAgent();
      const res = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/permits`, headers: issuer.post,
        payload: { agent: agent.did, ...PAY, max_per_request: eur(10), budget: { minor: 100, currency: 'USD' }, expires_at: new Date(Date.now() + 3_600_000).toISOString() } });
      assert.equal(res.statusCode, 400, res.body);
      assert.deepEqual(res.json().errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]), [['/max_per_request', 'currency_mismatch']]);
      const listed = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/permits?agent=${encodeURIComponent(agent.did)}`, headers: auditor.get });
      assert.deepEqual(listed.json().permits, []);
    });

    test('a REQUIRE_APPROVAL for 2^53-1 spends nothing; its obligation states the amount exactly, and the approved ALLOW spends all of it', async () => {
      const agent = newAgent();
      const permit = await issue(svc, agent.did, { ...PAY, budget: eur(MAX), max_uses: 1 });
      const req = { agent: agent.did, permit: permit.jws, action: 'pay', resource: 'resource://shop/1', amount: eur(MAX) };
      const asked = await decide(svc, key, req) as Awaited<ReturnType<typeof decide>> & { approval_request_id: string };
      assert.equal(asked.decision, 'REQUIRE_APPROVAL');
      assert.deepEqual(await usage(permit.commitment), { uses: 0, spent_minor: 0, currency: 'EUR' }, 'asking a person spent nothing');
      const approver = await newApprover(svc);
      const listed = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/approvals`, headers: { authorization: `Bearer ${approver.key}` } });
      const obligation = listed.json().approvals.find((o: { id: string }) => o.id === asked.approval_request_id);
      assert.deepEqual(obligation.amount, eur(MAX));
      assert.match(obligation.statement, /"minor":9007199254740991[,}]/);
      const approved = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/approvals`, headers: { authorization: `Bearer ${approver.key}` },
        payload: { approval_request_id: asked.approval_request_id, key_id: approver.keyId, signature: approver.sign(obligation.statement) } });
      assert.equal(approved.statusCode, 201, approved.body);
      assert.equal((await decide(svc, key, { ...req, approval_request_id: asked.approval_request_id })).decision, 'ALLOW');
      assert.deepEqual(await usage(permit.commitment), { uses: 1, spent_minor: MAX, currency: 'EUR' });
      const spent = await decide(svc, key, { ...req, amount: eur(0) });
      assert.deepEqual([spent.decision, spent.detail?.split(':')[0]], ['DENY', 'uses_exhausted']);
    });
  });
}

const pg = backends().find((b) => b.name === 'postgres');

test('two Gavel processes on PostgreSQL: delegates and their root racing on one 2^53-1 budget spend it at most once', { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  try {
    await activatePolicy(svc, POLICY);
    const holder = newAgent();
    const delegates = [newAgent(), newAgent()];
    const root = await issue(svc, holder.did, { ...PAY, budget: eur(MAX) });
    const chains = await Promise.all(delegates.map((d) => delegate(root.jws, holder, d.did, { ...PAY, budget: eur(MAX) })));
    const spenders = [...delegates.map((d, i) => [d.did, chains[i]!] as const), [holder.did, root.jws] as const];
    const key = await svc.keyHeader([]);
    const env = { GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options) };
    const [a, b] = await Promise.all([spawnGavel(env), spawnGavel(env)]);
    try {
      // 2^51 at a time: three fit in 2^53 - 1, a fourth would pass it.
      const results = await Promise.all(Array.from({ length: 90 }, async (_, i) => {
        const [agent, permit] = spenders[i % 3]!;
        const res = await fetch(`${(i % 2 ? a : b).url}/v1/authorize`, { method: 'POST', headers: { ...key, 'content-type': 'application/json' },
          body: JSON.stringify({ agent, permit, action: 'pay', resource: 'resource://shop/1', amount: eur(2 ** 51) }) });
        assert.equal(res.status, 200);
        return await res.json() as { decision: string; detail?: string };
      }));
      assert.equal(results.filter((d) => d.decision === 'ALLOW').length, 3);
      for (const d of results.filter((r) => r.decision !== 'ALLOW')) assert.match(d.detail ?? '', /^budget_exhausted:/);
      const rows = await svc.ts.store.db.selectFrom('permit_usage').select(['commitment', 'spent_minor', 'uses']).execute();
      const rootRow = rows.find((r) => r.commitment === root.commitment)!;
      assert.deepEqual([rootRow.spent_minor, rootRow.uses], [3 * 2 ** 51, 3]);
      const delegated = rows.filter((r) => r.commitment !== root.commitment).reduce((sum, r) => sum + r.spent_minor, 0);
      assert.equal(delegated, (3 - results.filter((d, i) => d.decision === 'ALLOW' && i % 3 === 2).length) * 2 ** 51, 'the delegates spent what was allowed through them');
    } finally {
      await Promise.all([a.kill(), b.kill()]);
    }
  } finally { await svc.stop(); }
});
