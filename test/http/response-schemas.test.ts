// Real answers of the decision, permit and agent routes (issue 5) validated against the response
// schemas of the OpenAPI document the app serves. Fastify serializes with those schemas but never
// validates against them: a null, a pattern or an enum value the document does not admit passes
// through the serializer unseen, and a client generated from the document then refuses the answer.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { backends } from '../support/backends.ts';
import { answerSchemas } from '../support/answer-schemas.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { activatePolicy, ALLOW_PAYMENTS, delegate, newAgent } from '../support/authorize.ts';
import { merchantsFile, startMerchant, type TestMerchant } from '../support/merchant.ts';

const C = '/v1/console/projects/{projectId}';
const M = '/v1/projects/{projectId}';
/** The operations of issue 5; each must have had a success answer validated. */
const OPERATIONS = [
  'POST /v1/authorize', `POST ${C}/permits`, `GET ${C}/permits`, `GET ${C}/permits/{commitment}`, `POST ${C}/permits/{commitment}/revoke`,
  `POST ${C}/agents`, `GET ${C}/agents`, `GET ${C}/agents/{agentDid}`, `POST ${C}/agents/freeze`, `POST ${C}/agents/release`,
  `POST ${M}/agents/freeze`, `POST ${M}/agents/release`, `GET ${M}/agents/state`,
];

/** A validator of answers against `doc` (test/support/answer-schemas.ts) that notes the operations it saw succeed. */
function answerValidator(doc: object) {
  const schemas = answerSchemas(doc);
  const checked = new Set<string>();
  return {
    checked,
    check(operation: string, res: LightMyRequestResponse): any {
      const [method, path] = operation.split(' ') as [string, string];
      const type = String(res.headers['content-type']).split(';')[0]!;
      const wrong = schemas.mismatch(method, path, res.statusCode, type, res.json());
      assert.equal(wrong, undefined, `${operation} ${res.statusCode}: ${wrong}\n${res.body}`);
      if (res.statusCode < 300) checked.add(operation);
      return res.json();
    },
  };
}

for (const backend of backends()) describe(`answers of the decision, permit and agent routes validate against /openapi.json (${backend.name})`, () => {
  let svc: TestService;
  let merchant: TestMerchant;
  let issuer: ConsoleMember;
  let admin: ConsoleMember;
  let v: ReturnType<typeof answerValidator>;
  const url = (path: string, params: Record<string, string> = {}) => path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(k === 'projectId' ? svc.projectId : params[k]!));
  const call = async (operation: string, headers: Record<string, string>, options: { params?: Record<string, string>; payload?: object; query?: string } = {}) => {
    const [method, path] = operation.split(' ') as [string, string];
    const res = await svc.app.inject({ method: method as 'GET', url: url(path, options.params) + (options.query ?? ''), headers, ...(options.payload ? { payload: options.payload } : {}) });
    return { res, body: v.check(operation, res) };
  };

  before(async () => {
    merchant = await startMerchant();
    svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url) });
    v = answerValidator((await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json());
    issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
    admin = await consoleMember(svc, ['ADMIN']);
  });
  after(async () => { try { await svc.stop(); } finally { await merchant.close(); } });

  test('decisions of every kind, refusals, and the execution and its replay', async () => {
    const key = await svc.keyHeader([]);
    const agent = newAgent();
    const expires_at = new Date(Date.now() + 3_600_000).toISOString();
    const { body: issued } = await call(`POST ${C}/permits`, issuer.post, { payload: {
      agent: agent.did, actions: ['pay'], resources: ['resource://shop/*'], max_per_request: { minor: 50_000, currency: 'EUR' }, budget: { minor: 100_000, currency: 'EUR' }, max_uses: 10, expires_at,
    } });
    const { body: reader } = await call(`POST ${C}/permits`, issuer.post, { payload: { agent: agent.did, actions: ['read'], resources: ['resource://*'], expires_at } });
    const decide = (payload: object) => call('POST /v1/authorize', key, { payload });
    const pay = (minor: number, extra: object = {}) => decide({ agent: agent.did, permit: issued.permit, action: 'pay', resource: 'resource://shop/1', amount: { minor, currency: 'EUR' }, ...extra });
    // No active policy: policy_version is null.
    const none = (await pay(100)).body;
    assert.deepEqual([none.decision, none.reason_code, none.policy_version], ['DENY', 'no_active_policy', null]);
    await activatePolicy(svc, ALLOW_PAYMENTS);
    assert.equal((await pay(100)).body.reason_code, 'policy_allow');
    const held = (await pay(20_000)).body;
    assert.equal(held.decision, 'REQUIRE_APPROVAL');
    assert.match(held.approval_request_id, /^apr_/);
    assert.equal((await decide({ agent: agent.did, permit: reader.permit, action: 'read', resource: 'resource://docs/secret/1' })).body.reason_code, 'policy_deny');
    assert.equal((await decide({ agent: agent.did, permit: reader.permit, action: 'read', resource: 'resource://shop/1' })).body.reason_code, 'no_matching_rule');
    const invalid = (await decide({ agent: newAgent().did, permit: issued.permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 1, currency: 'EUR' } })).body;
    assert.deepEqual([invalid.reason_code, invalid.detail.split(':')[0]], ['permit_invalid', 'subject_mismatch']);
    // An execution, and its replay, carry execution: {id, status}.
    const execution = { merchant: 'shop', operation: 'ok', payload: { order: 'o-1' }, nonce: 'n-1' };
    const ran = (await pay(100, { execution })).body;
    assert.deepEqual([ran.decision, ran.execution.status], ['ALLOW', 'SUCCEEDED']);
    const replay = (await pay(100, { execution })).body;
    assert.deepEqual([replay.decision, replay.reason_code, replay.execution], ['REPLAY', 'replay', ran.execution]);
    // Refusals are problems of the document's Problem schema.
    const both = (await pay(100, { execution: { ...execution, nonce: 'n-2' }, chain_authorization: {} })).body;
    assert.equal(both.code, 'both_execution_and_chain_authorization');
    assert.equal((await pay(100, { execution: { ...execution, nonce: 'n-3', url: 'https://x' } })).body.code, 'execution_url_not_allowed');
    const long = (await decide({ agent: agent.did, permit: issued.permit, action: 'a'.repeat(65), resource: `resource://${'r'.repeat(502)}` })).body;
    assert.deepEqual([...new Set(long.errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`))].filter((e) => String(e).endsWith('too_long')), ['/action too_long', '/resource too_long']);
    assert.equal((await call('POST /v1/authorize', { authorization: 'Bearer nope' }, { payload: {} })).body.code, 'unauthorized');
    // Frozen: DENY agent_frozen, whatever it presents.
    await call(`POST ${M}/agents/freeze`, key, { payload: { agent: agent.did, reason: 'test' } });
    assert.equal((await pay(100)).body.reason_code, 'agent_frozen');
  });

  test('permits: issue, list and page, get, revoke with descendants', async () => {
    const parent = newAgent();
    const child = newAgent();
    const expires_at = new Date(Date.now() + 3_600_000).toISOString();
    const { body: root } = await call(`POST ${C}/permits`, issuer.post, { payload: {
      agent: parent.did, actions: ['pay'], resources: ['resource://shop/*'], not_before: new Date(Date.now() - 60_000).toISOString(), expires_at,
    } });
    const later = (await call(`POST ${C}/permits`, issuer.post, { payload: { agent: parent.did, actions: ['read'], resources: ['resource://docs/*'], not_before: new Date(Date.now() + 600_000).toISOString(), expires_at } })).body;
    assert.equal(later.status, 'not_yet_valid');
    const chain = await delegate(root.permit, parent, child.did, { actions: ['pay'], resources: ['resource://shop/1'] });
    const leaf = chain.split('~').at(-1)!;
    const { createHash } = await import('node:crypto');
    const leafCommitment = createHash('sha256').update(leaf).digest('hex');
    // The delegated link is recorded when a decision first presents it.
    const key = await svc.keyHeader([]);
    await call('POST /v1/authorize', key, { payload: { agent: child.did, permit: chain, action: 'pay', resource: 'resource://shop/1' } });
    const first = (await call(`GET ${C}/permits`, admin.get, { query: '?limit=1' })).body;
    assert.equal(first.permits.length, 1);
    assert.equal(typeof first.next_cursor, 'string');
    const byAgent = (await call(`GET ${C}/permits`, admin.get, { query: `?agent=${encodeURIComponent(parent.did)}` })).body;
    assert.equal(byAgent.next_cursor, null);
    assert.equal(byAgent.permits.length, 2);
    const got = (await call(`GET ${C}/permits/{commitment}`, admin.get, { params: { commitment: leafCommitment } })).body;
    assert.deepEqual([got.parent, got.agent, got.status], [root.commitment, child.did, 'active']);
    const revoked = (await call(`POST ${C}/permits/{commitment}/revoke`, issuer.post, { params: { commitment: root.commitment }, payload: {} })).body;
    assert.equal(revoked.status, 'revoked');
    const via = (await call(`GET ${C}/permits/{commitment}`, admin.get, { params: { commitment: leafCommitment } })).body;
    assert.deepEqual([via.status, via.revoked_via], ['revoked', root.commitment]);
    assert.equal((await call(`POST ${C}/permits/{commitment}/revoke`, issuer.post, { params: { commitment: root.commitment }, payload: {} })).body.code, 'already_revoked');
    assert.equal((await call(`GET ${C}/permits/{commitment}`, admin.get, { params: { commitment: '0'.repeat(64) } })).body.code, 'not_found');
  });

  test('agents: register, list, get, freeze and release on both planes, state', async () => {
    const agent = newAgent().did;
    const created = (await call(`POST ${C}/agents`, admin.post, { payload: { did: agent, name: 'robot' } })).body;
    assert.equal(created.frozen, false);
    assert.equal((await call(`POST ${C}/agents`, admin.post, { payload: { did: agent } })).body.code, 'agent_exists');
    // An agent only seen through a freeze has no registration.
    const seen = newAgent().did;
    const key = await svc.keyHeader(['ADMIN']);
    const frozen = (await call(`POST ${M}/agents/freeze`, key, { payload: { agent: seen } })).body;
    assert.equal(frozen.frozen, true);
    assert.equal((await call(`POST ${M}/agents/freeze`, key, { payload: { agent: seen } })).body.code, 'agent_already_frozen');
    assert.equal((await call(`GET ${M}/agents/state`, key, { query: `?agent=${encodeURIComponent(seen)}` })).body.frozen_by, frozen.frozen_by);
    const released = (await call(`POST ${M}/agents/release`, key, { payload: { agent: seen, reason: 'ok' } })).body;
    assert.equal(released.frozen, false);
    assert.equal((await call(`POST ${M}/agents/release`, key, { payload: { agent: seen } })).body.code, 'agent_not_frozen');
    await call(`POST ${C}/agents/freeze`, admin.post, { payload: { agent, reason: 'stop' } });
    const one = (await call(`GET ${C}/agents/{agentDid}`, admin.get, { params: { agentDid: agent } })).body;
    assert.deepEqual([one.frozen, one.reason, one.name], [true, 'stop', 'robot']);
    await call(`POST ${C}/agents/release`, admin.post, { payload: { agent } });
    const listed = (await call(`GET ${C}/agents`, admin.get, { query: '?limit=500' })).body;
    const never = listed.agents.find((a: { did: string }) => a.did === seen);
    assert.equal(never.registered_at, null);
    assert.equal((await call(`GET ${M}/agents/state`, key, { query: `?agent=${encodeURIComponent(newAgent().did)}` })).body.frozen, false);
    assert.equal((await call(`GET ${C}/agents/{agentDid}`, admin.get, { params: { agentDid: newAgent().did } })).body.code, 'not_found');
  });

  test('every operation of the decision, permits and agents had a success answer validated', () => {
    assert.deepEqual(OPERATIONS.filter((o) => !v.checked.has(o)), []);
  });

  test('their instants (`…_at`) are declared date-time, as the approval routes\' are', async () => {
    const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const loose: string[] = [];
    const walk = (schema: any, at: string): void => {
      for (const [name, prop] of Object.entries<any>(schema?.properties ?? {})) {
        const alternatives = prop.anyOf ?? [prop];
        if (name.endsWith('_at') && !alternatives.some((a: any) => a.format === 'date-time')) loose.push(`${at}/${name}`);
        walk(prop, `${at}/${name}`);
        if (prop.items) walk(prop.items, `${at}/${name}/items`);
      }
    };
    for (const operation of OPERATIONS) {
      const [method, path] = operation.split(' ') as [string, string];
      for (const [status, res] of Object.entries<any>(doc.paths[path][method.toLowerCase()].responses)) {
        if (Number(status) < 300) walk(res.content['application/json'].schema, `${operation} ${status}`);
      }
    }
    assert.deepEqual(loose, []);
  });
});
