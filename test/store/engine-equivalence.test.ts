// Differential test of the two storage engines: SQLite and PostgreSQL must give users identical
// answers. One deterministic scenario (every reason code of docs/reason-codes.md, permits issued,
// delegated and revoked, policy versions, approvals, executions against a local merchant, freezes,
// every list route paged, the audit log and its proofs, refusals of bad input) runs on a service of
// each engine; the transcripts of their answers must be equal once what must differ is renamed:
// ids, times, signatures, hashes and cursors (each becomes `<kind#n>` by first appearance, so the
// structure — which answer names which id — is still compared). Agent and approver keys are derived
// from fixed seeds, so DIDs and public keys are the same on both engines. Nothing else is set aside:
// no difference between the engines is intended. Not reached: `indeterminate_invalid_input`, which
// POST /v1/authorize refuses with a 400 first (docs/reason-codes.md), as it does the permit checks
// `resource_invalid`, `amount_invalid` and `time_invalid`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { sql } from 'kysely';
import { backends, type Backend, type TestStore } from '../support/backends.ts';
import type { Config } from '../../src/config/config.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { delegate, type Agent } from '../support/authorize.ts';
import { merchantsFile, startMerchant } from '../support/merchant.ts';
import { withOffset } from '../support/offsets.ts';
import { didKeyFromPublicKey, permitCommitment, signPermitClaims, type GavelConstraints, type PermitClaims } from '../../src/domain/permit/index.ts';

/** An Ed25519 key from a fixed seed: the same on every run and every engine. */
function seededKey(seed: number): { privateKey: KeyObject; x: string } {
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.alloc(32, seed)]);
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  return { privateKey, x: createPublicKey(privateKey).export({ format: 'jwk' }).x! };
}
function seededAgent(seed: number): Agent {
  const { privateKey, x } = seededKey(seed);
  return { did: didKeyFromPublicKey(new Uint8Array(Buffer.from(x, 'base64url'))), privateKey, sign: async (m) => new Uint8Array(sign(null, m, privateKey)) };
}

const POLICY = {
  spec_version: '1',
  rules: [
    { id: 'pay-small', effect: 'ALLOW', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'pay' }, { op: 'lte', input: 'amount.minor', value: 10_000, currency: 'EUR' }] } },
    { id: 'pay-large', effect: 'REQUIRE_APPROVAL', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'pay' }, { op: 'gt', input: 'amount.minor', value: 10_000, currency: 'EUR' }] } },
    { id: 'read-docs', effect: 'ALLOW', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'read' }, { op: 'matches_resource', input: 'resource', value: 'resource://docs/*' }] } },
    { id: 'no-secrets', effect: 'DENY', when: { op: 'matches_resource', input: 'resource', value: 'resource://docs/secret/*' } },
    { id: 'refund-big-shop', effect: 'ALLOW', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'refund' }, { op: 'matches_resource', input: 'resource', value: 'resource://shop/big/*' }] } },
    { id: 'refund-small', effect: 'ALLOW', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'refund' }, { op: 'lte', input: 'amount.minor', value: 500, currency: 'EUR' }] } },
  ],
};

/** A delegated link signed by hand (delegatePermit refuses to sign what the service must refuse), with fixed claims. */
async function handLink(chain: string, from: Agent, to: string, gavel: Omit<GavelConstraints, 'parent'>, parent?: string, issuer = from.did, over: Partial<PermitClaims> = {}): Promise<string> {
  const last = chain.split('~').at(-1)!;
  const p = JSON.parse(Buffer.from(last.split('.')[1]!, 'base64url').toString('utf8')) as PermitClaims;
  const claims: PermitClaims = { iss: issuer, sub: to, aud: p.aud, jti: `hand-${to.slice(-8)}`, iat: p.iat, nbf: p.nbf, exp: p.exp, gavel: { ...gavel, parent: parent ?? permitCommitment(last) }, ...over };
  return `${chain}~${await signPermitClaims(claims, `${issuer}#x`, from.sign)}`;
}

/**
 * PostgreSQL compares text by the database's collation, and many installations are created under
 * en_US (case-insensitive at first: "to" before "tU"); SQLite compares bytes. Every text column of
 * the test schema is given an English collation, as such a database would give it, where the
 * server has ICU (the test's own database may well be C, which would hide the difference).
 */
async function underEnglishCollation(ts: TestStore): Promise<Partial<Config>> {
  if (ts.options.kind !== 'postgres') return {};
  const db = ts.store.db;
  const icu = await sql<{ n: number }>`select count(*)::int as n from pg_collation where collname = 'en-x-icu'`.execute(db);
  if (icu.rows[0]!.n === 0) return {};
  const cols = await sql<{ t: string; c: string }>`select table_name as t, column_name as c from information_schema.columns
    where table_schema = current_schema() and data_type = 'text'`.execute(db);
  for (const { t, c } of cols.rows) await sql`alter table ${sql.id(t)} alter column ${sql.id(c)} type text collate "en-x-icu"`.execute(db);
  return {};
}

interface PermitItem { created_at: string; agent: string; commitment: string }
/**
 * Permits with the same created_at (the links of one delegated chain, recorded by one decision) list
 * by commitment, a hash over a random jti: an order of their own on every run, on either engine.
 * Such ties are put in the order of their agents, who are the same on both.
 */
function tiesByAgent(items: PermitItem[]): PermitItem[] {
  const runs: PermitItem[][] = [];
  for (const item of items) {
    const run = runs.at(-1);
    if (run && run[0]!.created_at === item.created_at) run.push(item); else runs.push([item]);
  }
  return runs.flatMap((run) => run.sort((a, b) => (a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : 0)));
}

interface Step { label: string; status: number; body: unknown }

/** The scenario on one engine: every answer, in order. */
async function transcript(backend: Backend): Promise<Step[]> {
  const merchant = await startMerchant({ slowMs: 20 });
  const svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url), auditTickMs: 60_000, checkpointIntervalMs: 60_000 }, underEnglishCollation)
    .catch(async (e: unknown) => { await merchant.close(); throw e; });
  try {
    await new Promise((resolve) => setTimeout(resolve, 0));
    await svc.auditLog.tick();
    return await scenario(svc);
  } finally {
    try { await svc.stop(); } finally { await merchant.close(); }
  }
}

async function scenario(svc: TestService): Promise<Step[]> {
  const steps: Step[] = [];
  const p = svc.projectId;
  // Ids are time-ordered to the millisecond; a millisecond between writes makes list order the
  // order of the scenario rather than of random bits.
  const tick = () => new Promise((r) => setTimeout(r, 2));
  const call = async (label: string, method: 'GET' | 'POST' | 'PUT', url: string, headers: Record<string, string>, payload?: unknown) => {
    const res = await svc.app.inject({ method, url, headers, ...(payload === undefined ? {} : typeof payload === 'string' ? { payload, headers: { ...headers, 'content-type': 'application/json' } } : { payload }) } as never);
    const body = res.headers['content-type']?.toString().includes('json') ? res.json() : res.body;
    steps.push({ label, status: res.statusCode, body });
    await tick();
    return body as any;
  };

  const admin = await consoleMember(svc, ['ADMIN', 'AUDITOR'], { name: 'alice-admin' }); await tick();
  const author = await consoleMember(svc, ['POLICY_AUTHOR'], { name: 'bob-author' }); await tick();
  const issuer = await consoleMember(svc, ['PERMIT_ISSUER'], { name: 'carol-issuer' }); await tick();
  const approverPerson = await consoleMember(svc, ['APPROVER'], { name: 'dave-approver' }); await tick();
  const C = `/v1/console/projects/${p}`;
  const M = `/v1/projects/${p}`;

  // Members, roles and keys.
  const keyOf = async (label: string, who: ConsoleMember, roles: string[], principal?: string) => {
    const minted = await call(label, 'POST', `${C}/api-keys`, who.post, { name: label, roles, ...(principal ? { principal_id: principal } : {}) });
    return { authorization: `Bearer ${minted.secret}` } as Record<string, string>;
  };
  const adminKeyEarly = await keyOf('bootstrap admin key', admin, ['ADMIN'], admin.principalId);
  const svcPrincipal = await call('principal: service', 'POST', `${M}/principals`, adminKeyEarly, { kind: 'service', name: 'robot', roles: [] });
  const machine = await keyOf('machine key', admin, [], svcPrincipal.principal_id);
  const authorKey = await keyOf('author key', author, ['POLICY_AUTHOR']);
  const auditorKey = await keyOf('auditor key', admin, ['AUDITOR'], admin.principalId);
  const adminKey = await keyOf('admin person key', admin, ['ADMIN'], admin.principalId);
  await call('member: add by name', 'POST', `${C}/members`, admin.post, { name: 'robot', roles: ['AUDITOR'] });
  await call('principal: same name in capitals', 'POST', `${M}/principals`, adminKeyEarly, { kind: 'service', name: 'ROBOT' });
  await call('principal: unicode name', 'POST', `${M}/principals`, adminKeyEarly, { kind: 'service', name: 'Zoë 🤖 ﬁ' });
  await call('principal: same unicode name decomposed', 'POST', `${M}/principals`, adminKeyEarly, { kind: 'service', name: 'Zoe\u0308 🤖 ﬁ' });
  await call('member: add twice', 'POST', `${C}/members`, admin.post, { name: 'robot', roles: [] });
  await call('member: neither id nor name', 'POST', `${C}/members`, admin.post, { roles: [] });
  await call('member: grant role', 'POST', `${C}/members/${issuer.principalId}/roles`, admin.post, { role: 'AUDITOR' });
  await call('member: grant role again', 'POST', `${C}/members/${issuer.principalId}/roles`, admin.post, { role: 'AUDITOR' });
  await call('member: revoke role', 'POST', `${C}/members/${issuer.principalId}/roles/AUDITOR/revoke`, admin.post, {});
  await call('member: revoke role not held', 'POST', `${C}/members/${issuer.principalId}/roles/AUDITOR/revoke`, admin.post, {});
  await call('member: grant by non-admin', 'POST', `${C}/members/${issuer.principalId}/roles`, author.post, { role: 'ADMIN' });
  await call('sod: read', 'GET', `${M}/sod`, adminKey);
  await call('sod: set', 'PUT', `${M}/sod`, adminKey, { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR'], ['APPROVER', 'POLICY_AUTHOR']], four_eyes_policy_activation: false });
  await call('sod: violate', 'POST', `${C}/members/${author.principalId}/roles`, admin.post, { role: 'APPROVER' });
  await call('api key: no roles for another', 'POST', `${C}/api-keys`, author.post, { name: 'x', roles: [] });
  const doomed = await call('api key: to revoke', 'POST', `${C}/api-keys`, admin.post, { name: 'doomed', roles: [] });
  await call('api key: revoke', 'POST', `${C}/api-keys/${doomed.id}/revoke`, admin.post, {});
  await call('api key: revoked key refused', 'GET', `${M}/policy`, { authorization: `Bearer ${doomed.secret}` });
  await call('api key: revoke again', 'POST', `${C}/api-keys/${doomed.id}/revoke`, admin.post, {});

  // Accounts and sessions.
  await call('register', 'POST', '/v1/console/register', {}, { name: 'erin', password: 'correct horse battery staple' });
  await call('register taken', 'POST', '/v1/console/register', {}, { name: 'erin', password: 'another long password' });
  await call('login wrong password', 'POST', '/v1/console/login', {}, { name: 'erin', password: 'wrong horse battery staple' });
  await call('login unknown', 'POST', '/v1/console/login', {}, { name: 'nobody', password: 'whatever it is' });
  const erinLogin = await svc.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name: 'erin', password: 'correct horse battery staple' } });
  steps.push({ label: 'login', status: erinLogin.statusCode, body: erinLogin.json() });
  const erin = { cookie: erinLogin.cookies.map((c) => `${c.name}=${c.value}`).join('; '), 'x-csrf-token': erinLogin.json().csrf_token as string };
  await call('erin projects', 'GET', '/v1/console/projects', { cookie: erin.cookie });
  await call('erin: not a member', 'GET', `${C}/members`, { cookie: erin.cookie });
  const erinMember = await call('member: add erin', 'POST', `${C}/members`, admin.post, { name: 'erin', roles: ['AUDITOR'] });
  await call('erin: a member', 'GET', `${C}/me`, { cookie: erin.cookie });
  await call('erin: mutation without csrf', 'POST', '/v1/console/logout', { cookie: erin.cookie }, {});
  await call('member: revoke erin', 'POST', `${C}/members/${erinMember.principal_id}/revoke`, admin.post, {});
  await call('member: revoke erin again', 'POST', `${C}/members/${erinMember.principal_id}/revoke`, admin.post, {});
  await call('erin: no longer a member', 'GET', `${C}/me`, { cookie: erin.cookie });
  await call('logout', 'POST', '/v1/console/logout', { ...erin, 'content-type': 'application/json' }, {});
  await call('erin: after logout', 'GET', '/v1/console/projects', { cookie: erin.cookie });
  await call('memberships', 'GET', `${C}/memberships?limit=500`, admin.get);

  // Agents.
  const agents = [1, 2, 3, 4, 5].map(seededAgent);
  const [a1, a2, a3, a4, a5] = agents as [Agent, Agent, Agent, Agent, Agent];
  for (const [i, a] of agents.entries()) await call(`agent: register ${i + 1}`, 'POST', `${C}/agents`, admin.post, { did: a.did, name: `agent-${i + 1}` });
  await call('agent: register twice', 'POST', `${C}/agents`, admin.post, { did: a1.did, name: 'again' });
  await call('agent: bad did', 'POST', `${C}/agents`, admin.post, { did: 'did:bad', name: 'x' });

  // Policy: none active, then versions, activation, simulation.
  const authorize = (label: string, body: Record<string, unknown>) => call(`authorize: ${label}`, 'POST', '/v1/authorize', machine, body);
  const permitOf = async (label: string, body: Record<string, unknown>) =>
    (await call(`permit: ${label}`, 'POST', `${C}/permits`, issuer.post, { expires_at: new Date(Date.now() + 3_600_000).toISOString(), ...body })).permit as string;
  const p1 = await permitOf('a1 pay shop', { agent: a1.did, actions: ['pay', 'read', 'refund'], resources: ['resource://shop/*', 'resource://docs/*'] });
  const pay = (amount: number, over: Record<string, unknown> = {}) => ({ agent: a1.did, permit: p1, action: 'pay', resource: 'resource://shop/1', amount: { minor: amount, currency: 'EUR' }, ...over });
  await authorize('no_active_policy', pay(100));
  await call('policy: get none', 'GET', `${M}/policy`, machine);
  await call('policy: save invalid', 'PUT', `${M}/policy`, authorKey, { policy: { spec_version: '1', rules: [{ id: 'x', effect: 'MAYBE', when: { op: 'eq', input: 'risk_score', value: 1 } }] }, note: 'bad' });
  await call('policy: save v1', 'PUT', `${M}/policy`, authorKey, { policy: { ...POLICY, rules: POLICY.rules.slice(0, 2) }, note: 'v1' });
  await call('policy: save v2', 'PUT', `${C}/policy`, author.post, { policy: POLICY, note: 'v2' });
  await call('policy: activate by admin', 'POST', `${M}/policy/activate`, adminKey, { version: 1 });
  await call('policy: activate missing', 'POST', `${M}/policy/activate`, authorKey, { version: 99 });
  await call('policy: activate v1', 'POST', `${M}/policy/activate`, authorKey, { version: 1 });
  await authorize('no_matching_rule (v1 has no read rule)', pay(100, { action: 'read', resource: 'resource://docs/a' }));
  await call('policy: activate v2', 'POST', `${C}/policy/activate`, author.post, { version: 2 });
  await call('policy: activate v2 again', 'POST', `${M}/policy/activate`, authorKey, { version: 2 });
  await call('policy: get', 'GET', `${M}/policy`, machine);
  await call('policy: console get', 'GET', `${C}/policy`, admin.get);
  for (const [label, request] of Object.entries({
    allow: { agent: a1.did, action: 'pay', resource: 'resource://shop/1', amount: { minor: 5, currency: 'EUR' } },
    approval: { agent: a1.did, action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' } },
    currency: { agent: a1.did, action: 'pay', resource: 'resource://shop/1', amount: { minor: 5, currency: 'USD' } },
    missing: { agent: a1.did, action: 'pay', resource: 'resource://shop/1' },
    deny: { agent: a1.did, action: 'read', resource: 'resource://docs/secret/x' },
    'no agent': { action: 'pay', resource: 'resource://shop/1' },
  })) await call(`policy: simulate ${label}`, 'POST', `${M}/policy/simulate`, authorKey, { request });
  await call('policy: simulate against a version', 'POST', `${C}/policy/simulate`, author.post, { version: 1, request: { agent: a1.did, action: 'read', resource: 'resource://docs/a' } });

  // Decisions: every reason code the route can reach.
  await authorize('policy_allow', pay(100));
  await authorize('policy_allow read', pay(0, { action: 'read', resource: 'resource://docs/a', amount: undefined }));
  await authorize('policy_deny', { agent: a1.did, permit: p1, action: 'read', resource: 'resource://docs/secret/x' });
  await authorize('no_matching_rule', { agent: a1.did, permit: p1, action: 'refund', resource: 'resource://shop/1', amount: { minor: 900, currency: 'EUR' } });
  await authorize('indeterminate_currency_mismatch', pay(100, { amount: { minor: 100, currency: 'USD' } }));
  await authorize('indeterminate_missing_input', { agent: a1.did, permit: p1, action: 'pay', resource: 'resource://shop/1' });
  const pending = await authorize('policy_require_approval', pay(50_000));
  await authorize('permit_invalid malformed', pay(100, { permit: 'not-a-permit' }));
  await authorize('permit_invalid signature', pay(100, { permit: p1.slice(0, -4) + (p1.endsWith('AAAA') ? 'BBBB' : 'AAAA') }));
  await authorize('permit_invalid subject_mismatch', pay(100, { agent: a2.did }));
  await authorize('permit_invalid action_not_covered', pay(100, { action: 'ship' }));
  await authorize('permit_invalid resource_not_covered', pay(100, { resource: 'resource://bank/1' }));
  await authorize('indeterminate_currency_mismatch in GBP', pay(100, { amount: { minor: 100, currency: 'GBP' } }));
  const pBudget = await permitOf('a2 budget and uses', { agent: a2.did, actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 300, currency: 'EUR' }, max_uses: 3 });
  for (const amount of [100, 100, 500, 100, 100, 100]) await authorize(`budget ${amount}`, pay(amount, { agent: a2.did, permit: pBudget }));
  const pUses = await permitOf('a3 uses', { agent: a3.did, actions: ['read'], resources: ['resource://docs/*'], max_uses: 2 });
  for (let i = 0; i < 4; i++) await authorize(`uses ${i}`, { agent: a3.did, permit: pUses, action: 'read', resource: 'resource://docs/a' });
  await authorize('uses spent but policy denies', { agent: a3.did, permit: pUses, action: 'read', resource: 'resource://docs/secret/a' });
  await permitOf('expired is refused at issue', { agent: a4.did, actions: ['pay'], resources: ['resource://shop/*'], expires_at: new Date(Date.now() - 1000).toISOString() });
  const pLater = await permitOf('not_yet_valid', { agent: a4.did, actions: ['pay'], resources: ['resource://shop/*'], not_before: new Date(Date.now() + 600_000).toISOString() });
  await authorize('permit_invalid not_yet_valid', pay(100, { agent: a4.did, permit: pLater }));
  const pSpend = await permitOf('a4 budget only', { agent: a4.did, actions: ['pay', 'refund'], resources: ['resource://shop/*'], budget: { minor: 9000, currency: 'EUR' } });
  for (const amount of [4000, 4000, 4000, 1000, 0, 1]) await authorize(`budget_exhausted ${amount}`, pay(amount, { agent: a4.did, permit: pSpend }));
  const pBig = await permitOf('a4 the largest budget', { agent: a4.did, actions: ['refund'], resources: ['resource://shop/*'], budget: { minor: 2 ** 53 - 1, currency: 'EUR' }, max_per_request: { minor: 2 ** 53 - 1, currency: 'EUR' } });
  for (const amount of [500, 2 ** 53 - 501, 1, 0, 2 ** 53 - 1]) await authorize(`largest budget ${amount}`, pay(amount, { action: 'refund', resource: 'resource://shop/big/1', agent: a4.did, permit: pBig }));
  await call('permit: usage of the largest budget', 'GET', `${C}/permits?agent=${encodeURIComponent(a4.did)}&limit=1`, admin.get);
  await permitOf('bad resources', { agent: a4.did, actions: [''], resources: ['http://x'] });

  // Delegation.
  const narrow = { actions: ['pay'], resources: ['resource://shop/*'], max_per_request: { minor: 1000, currency: 'EUR' } };
  const d1 = await delegate(p1, a1, a4.did, narrow);
  await authorize('delegated allow', pay(100, { agent: a4.did, permit: d1 }));
  await authorize('delegated amount_exceeds_per_request', pay(5000, { agent: a4.did, permit: d1 }));
  // Two agents new to the project in one decision (seeds whose DIDs order differently in bytes and
  // in English): they share created_at, so the agent list breaks the tie on their DIDs.
  const [y, z] = [seededAgent(17), seededAgent(21)];
  const yz = await delegate(await delegate(d1, a4, y.did, narrow), y, z.did, narrow);
  await authorize('delegated twice to new agents', pay(100, { agent: z.did, permit: yz }));
  await authorize('permit_invalid delegation_widened', pay(100, { agent: a4.did, permit: await handLink(p1, a1, a4.did, { ...narrow, actions: ['pay', 'steal'] }) }));
  await authorize('permit_invalid chain_broken', pay(100, { agent: a4.did, permit: await handLink(p1, a1, a4.did, narrow, 'f'.repeat(64)) }));
  await authorize('permit_invalid delegation_widened in time', pay(100, { agent: a4.did, permit: await handLink(p1, a1, a4.did, narrow, undefined, a1.did, { iat: Math.floor(Date.now() / 1000) - 120, nbf: Math.floor(Date.now() / 1000) - 120, exp: Math.floor(Date.now() / 1000) - 60 }) }));
  await authorize('permit_invalid chain_too_long', pay(100, { permit: Array(9).fill(p1).join('~') }));
  await authorize('permit_invalid too_large', pay(100, { permit: 'e'.repeat(40_000) }));
  await authorize('permit_invalid algorithm', pay(100, { permit: `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p1.split('.')[1]}.` }));
  await authorize('permit_invalid signature of a link', pay(100, { agent: a4.did, permit: await handLink(p1, a2, a4.did, narrow, undefined, a1.did) }));

  // Freezes.
  await call('freeze a1', 'POST', `${M}/agents/freeze`, machine, { agent: a1.did, reason: 'test' });
  await call('freeze a1 again', 'POST', `${M}/agents/freeze`, machine, { agent: a1.did, reason: 'again' });
  await call('state a1', 'GET', `${M}/agents/state?agent=${encodeURIComponent(a1.did)}`, machine);
  await authorize('agent_frozen', pay(100));
  await authorize('agent_frozen delegator', pay(100, { agent: a4.did, permit: d1 }));
  await call('release a1', 'POST', `${C}/agents/release`, admin.post, { agent: a1.did, reason: 'done' });
  await call('release a1 again', 'POST', `${M}/agents/release`, machine, { agent: a1.did });
  await call('freeze agent in capitals', 'POST', `${M}/agents/freeze`, machine, { agent: 'did:example:Stranger', reason: 'naïve ✓' });
  await call('state agent in lowercase', 'GET', `${M}/agents/state?agent=${encodeURIComponent('did:example:stranger')}`, machine);
  await call('freeze unknown agent', 'POST', `${C}/agents/freeze`, admin.post, { agent: 'did:example:stranger' });
  await call('agent view a1', 'GET', `${C}/agents/${encodeURIComponent(a1.did)}`, admin.get);
  await call('agent view unknown', 'GET', `${C}/agents/${encodeURIComponent('did:example:nobody')}`, admin.get);

  // Approvals.
  const approverKey = seededKey(42);
  const reg = await call('approval key: register', 'POST', `${C}/principals/${approverPerson.principalId}/approval-keys`, approverPerson.post, { public_key: approverKey.x, name: 'laptop' });
  await call('approval key: register twice', 'POST', `${C}/principals/${approverPerson.principalId}/approval-keys`, approverPerson.post, { public_key: approverKey.x, name: 'laptop' });
  const approverMachine = await keyOf('approver key', approverPerson, ['APPROVER']);
  const obligation = await call('approval: view', 'GET', `${C}/approvals/${pending.approval_request_id}`, approverPerson.get);
  const signStatement = (text: string) => sign(null, Buffer.from(text, 'utf8'), approverKey.privateKey).toString('base64url');
  await call('approval: bad signature', 'POST', `${M}/approvals`, approverMachine, { approval_request_id: pending.approval_request_id, key_id: reg.id, signature: signStatement('other') });
  await call('approval: record', 'POST', `${M}/approvals`, approverMachine, { approval_request_id: pending.approval_request_id, key_id: reg.id, signature: signStatement(obligation.statement) });
  await call('approval: record twice', 'POST', `${M}/approvals`, approverMachine, { approval_request_id: pending.approval_request_id, key_id: reg.id, signature: signStatement(obligation.statement) });
  await authorize('approval differs in amount', pay(60_000, { approval_request_id: pending.approval_request_id }));
  await authorize('approval_granted', pay(50_000, { approval_request_id: pending.approval_request_id }));
  await authorize('approval consumed', pay(50_000, { approval_request_id: pending.approval_request_id }));
  const second = await authorize('second obligation', pay(70_000));
  const o2 = await call('approval: view second', 'GET', `${C}/approvals/${second.approval_request_id}`, admin.get);
  await authorize('approval not yet approved', pay(70_000, { approval_request_id: second.approval_request_id }));
  await call('approval: record second', 'POST', `${M}/approvals`, approverMachine, { approval_request_id: second.approval_request_id, key_id: reg.id, signature: signStatement(o2.statement) });
  await call('approval: revoke', 'POST', `${M}/approvals/revoke`, approverMachine, { approval_request_id: second.approval_request_id, reason: 'changed mind' });
  await call('approval: revoke again', 'POST', `${M}/approvals/revoke`, approverMachine, { approval_request_id: second.approval_request_id });
  await authorize('approval withdrawn', pay(70_000, { approval_request_id: second.approval_request_id }));
  await call('approval: unknown', 'POST', `${M}/approvals`, approverMachine, { approval_request_id: 'apr_00000000000000000000000000', key_id: reg.id, signature: 'x' });
  const third = await authorize('third obligation', pay(80_000));
  const o3 = await call('approval: view third', 'GET', `${C}/approvals/${third.approval_request_id}`, admin.get);
  await call('approval: record third', 'POST', `${M}/approvals`, approverMachine, { approval_request_id: third.approval_request_id, key_id: reg.id, signature: signStatement(o3.statement) });
  const fourth = await authorize('fourth obligation', pay(90_000));
  // Its time run out, as a day passing would leave it.
  await svc.ts.store.db.updateTable('approval_requests').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', fourth.approval_request_id).execute();
  await authorize('approval expired', pay(90_000, { approval_request_id: fourth.approval_request_id }));
  await call('approval key: retire', 'POST', `${C}/approval-keys/${reg.id}/retire`, approverPerson.post, {});
  await call('approval: view lapsed', 'GET', `${C}/approvals/${third.approval_request_id}`, admin.get);
  await authorize('approval lapsed (key retired)', pay(80_000, { approval_request_id: third.approval_request_id }));
  await call('approval: record with a retired key', 'POST', `${M}/approvals`, approverMachine, { approval_request_id: fourth.approval_request_id, key_id: reg.id, signature: 'x' });
  await call('approval key: retire again', 'POST', `${C}/approval-keys/${reg.id}/retire`, approverPerson.post, {});

  // A checkpoint here, another at the end: the consistency proof between them is compared too.
  const midSize = (await svc.auditLog.tick({ force: true })).checkpoint!;
  const midAt = Date.now();
  await tick();

  // Permit revocation.
  const p5 = await permitOf('a5 to revoke', { agent: a5.did, actions: ['pay'], resources: ['resource://shop/*'] });
  const permits = await call('permits: list for a5', 'GET', `${C}/permits?agent=${encodeURIComponent(a5.did)}`, admin.get);
  const commitment = permits.permits[0].commitment as string;
  await authorize('before revocation', pay(100, { agent: a5.did, permit: p5 }));
  await call('permit: revoke', 'POST', `${C}/permits/${commitment}/revoke`, issuer.post, {});
  await call('permit: revoke again', 'POST', `${C}/permits/${commitment}/revoke`, issuer.post, {});
  await call('permit: view', 'GET', `${C}/permits/${commitment}`, admin.get);
  await call('permit: view unknown', 'GET', `${C}/permits/${'0'.repeat(64)}`, admin.get);
  await authorize('permit_invalid revoked', pay(100, { agent: a5.did, permit: p5 }));

  // Executions against the merchant.
  // A hang goes to the merchant waited for briefly (merchantsFile); a call meant to succeed has room.
  const exec = (operation: string, nonce: string, over: Record<string, unknown> = {}) =>
    authorize(`execute ${operation} ${nonce}`, pay(100, { execution: { merchant: operation === 'hang' ? 'short_timeout' : 'shop', operation, nonce, payload: { order: nonce } }, ...over }));
  for (const op of ['ok', 'refuse', 'fail', 'reset', 'redirect', 'hang']) await exec(op, `n-${op}`);
  await exec('ok', 'n-ok');
  await exec('ok', 'n-ok', { amount: { minor: 101, currency: 'EUR' } });
  await exec('nope', 'n-unknown-op');
  await authorize('unknown merchant', pay(100, { execution: { merchant: 'nobody', operation: 'ok', nonce: 'n-x' } }));
  await authorize('url in execution', pay(100, { execution: { merchant: 'shop', operation: 'ok', nonce: 'n-y', url: 'http://evil', payload: { url: 'x' } } }));
  await exec('ok', 'n-denied', { resource: 'resource://docs/secret/x', action: 'read' });
  const unknown = await call('executions: unknown', 'GET', `${M}/executions?status=UNKNOWN`, machine);
  for (const [i, e] of (unknown.executions as { id: string }[]).entries()) {
    if (i === 0) await call('resolve by service key', 'POST', `${M}/executions/resolve`, machine, { execution_id: e.id, outcome: 'SUCCEEDED', note: 'checked' });
    await call(`resolve ${i}`, 'POST', `${C}/executions/${e.id}/resolve`, admin.post, { outcome: i % 2 ? 'FAILED' : 'SUCCEEDED', note: 'checked' });
    await call(`resolve ${i} again`, 'POST', `${M}/executions/resolve`, adminKey, { execution_id: e.id, outcome: 'FAILED', note: 'late' });
  }

  const done = await call('executions: succeeded', 'GET', `${M}/executions?status=SUCCEEDED&limit=1`, machine);
  await call('resolve a succeeded execution', 'POST', `${C}/executions/${done.executions[0].id}/resolve`, admin.post, { outcome: 'FAILED', note: 'no' });
  await call('resolve an unknown id', 'POST', `${C}/executions/exe_00000000000000000000000000/resolve`, admin.post, { outcome: 'FAILED', note: 'no' });

  // A generated sequence of decisions (fixed seed): agents, actions, resources and amounts mixed.
  const ops = fc.sample(fc.record({
    agent: fc.constantFrom(a1, a2, a3),
    action: fc.constantFrom('pay', 'read', 'refund', 'ship'),
    resource: fc.constantFrom('resource://shop/1', 'resource://shop/a/b', 'resource://docs/a', 'resource://docs/secret/z', 'resource://bank/1'),
    amount: fc.option(fc.record({ minor: fc.constantFrom(0, 1, 499, 500, 501, 10_000, 10_001, 99_999, 2 ** 53 - 1), currency: fc.constantFrom('EUR', 'USD', 'eur') }), { nil: undefined }),
    intent: fc.option(fc.constantFrom('restock', 'é', 'x'.repeat(129)), { nil: undefined }),
  }), { seed: 20261127, numRuns: 40 });
  const permitFor = new Map([[a1.did, p1], [a2.did, pBudget], [a3.did, pUses]]);
  for (const [i, op] of ops.entries()) {
    await authorize(`generated ${i}`, { agent: op.agent.did, permit: permitFor.get(op.agent.did), action: op.action, resource: op.resource, ...(op.amount ? { amount: op.amount } : {}), ...(op.intent ? { intent: op.intent } : {}) });
  }

  // A delegated link revoked: the links below it read as revoked through it, and its chain is refused.
  const a4permits = await call('permits: a4', 'GET', `${C}/permits?agent=${encodeURIComponent(a4.did)}&limit=500`, admin.get);
  const link = (a4permits.permits as { commitment: string; issued_by: string }[]).find((x) => x.issued_by === a1.did)!;
  await call('permit: revoke a delegated link', 'POST', `${C}/permits/${link.commitment}/revoke`, issuer.post, {});
  await call('permits: below the revoked link', 'GET', `${C}/permits?agent=${encodeURIComponent(z.did)}`, admin.get);
  await authorize('permit_invalid revoked ancestor', pay(100, { agent: z.did, permit: yz }));

  // The active version damaged in storage: policy_integrity, until a sound version is activated.
  const v3 = await call('policy: save v3', 'PUT', `${M}/policy`, authorKey, { policy: POLICY, note: 'v3' });
  await call('policy: activate v3', 'POST', `${M}/policy/activate`, authorKey, { version: v3.version });
  await svc.ts.store.db.updateTable('policy_versions').set({ document: '{"spec_version":' }).where('project_id', '=', p).where('version', '=', v3.version).execute();
  await authorize('policy_integrity', pay(100));
  await authorize('policy_integrity, frozen first', { agent: 'did:example:stranger', permit: p1, action: 'pay', resource: 'resource://shop/1' });
  await call('policy: simulate under damage', 'POST', `${M}/policy/simulate`, authorKey, { request: { agent: a1.did, action: 'pay', resource: 'resource://shop/1' } });
  await call('policy: get damaged', 'GET', `${M}/policy`, machine);
  await call('policy: versions with a damaged one', 'GET', `${M}/policy/versions`, machine);
  await call('policy: activate v2 after damage', 'POST', `${M}/policy/activate`, authorKey, { version: 2 });
  await authorize('policy_allow after damage', pay(100));

  // A generated sequence of operations (fixed seed) on agents of its own: permits issued with
  // budgets and uses, decisions, freezes and releases, revocations, interleaved.
  const crew = [50, 51, 52].map(seededAgent);
  const held = new Map<string, string[]>(crew.map((a) => [a.did, []]));
  const money = fc.record({ minor: fc.constantFrom(0, 1, 250, 500, 501, 9_999, 10_001), currency: fc.constantFrom('EUR', 'EUR', 'EUR', 'USD') });
  const commands = fc.sample(fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('authorize' as const), who: fc.nat(2), permit: fc.nat(5), action: fc.constantFrom('pay', 'refund', 'read'), resource: fc.constantFrom('resource://shop/1', 'resource://shop/big/2', 'resource://docs/a'), amount: fc.option(money, { nil: undefined, freq: 5 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('issue' as const), who: fc.nat(2), actions: fc.subarray(['pay', 'refund', 'read'], { minLength: 1 }), budget: fc.option(fc.constantFrom(500, 1_000, 20_000), { nil: undefined }), uses: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('freeze' as const, 'release' as const), who: fc.nat(2) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('revoke' as const), who: fc.nat(2), permit: fc.nat(5) }) },
  ), { seed: 7_2026, numRuns: 120 });
  for (const [i, c] of commands.entries()) {
    const agent = crew[c.who]!;
    const mine = held.get(agent.did)!;
    if (c.kind === 'issue') {
      mine.push(await permitOf(`op ${i}`, { agent: agent.did, actions: c.actions, resources: ['resource://shop/*', 'resource://docs/*'], ...(c.budget ? { budget: { minor: c.budget, currency: 'EUR' } } : {}), ...(c.uses ? { max_uses: c.uses } : {}) }));
    } else if (c.kind === 'authorize') {
      await authorize(`op ${i}`, { agent: agent.did, permit: mine.length ? mine[c.permit % mine.length] : 'none', action: c.action, resource: c.resource, ...(c.amount ? { amount: c.amount } : {}) });
    } else if (c.kind === 'revoke') {
      if (mine.length === 0) continue;
      const list = await call(`op ${i} permits`, 'GET', `${C}/permits?agent=${encodeURIComponent(agent.did)}&limit=500`, admin.get);
      const ours = (list.permits as { commitment: string }[]).reverse(); // oldest first, as `mine`
      await call(`op ${i}`, 'POST', `${C}/permits/${ours[c.permit % ours.length]!.commitment}/revoke`, issuer.post, {});
    } else {
      await call(`op ${i}`, 'POST', `${C}/agents/${c.kind}`, admin.post, { agent: agent.did });
    }
  }

  // Refusals of bad input.
  await authorize('empty object', {});
  await authorize('wrong types', { agent: 1, permit: [], action: '', resource: 'resource://x/../y', amount: { minor: -1, currency: 5 }, extra: true });
  await authorize('bad resource', pay(1, { resource: 'resource://Shop/%2e%2e/x' }));
  await authorize('bad did', pay(1, { agent: 'did:x:' }));
  await call('authorize: not json', 'POST', '/v1/authorize', machine, '{"agent": x}');
  await call('authorize: duplicate member', 'POST', '/v1/authorize', machine, '{"agent":"a","agent":"b"}');
  await call('authorize: inexact number', 'POST', '/v1/authorize', machine, '{"amount":{"minor":9007199254740993,"currency":"EUR"}}');
  await call('authorize: no key', 'POST', '/v1/authorize', {}, pay(1));
  await call('authorize: bad key', 'POST', '/v1/authorize', { authorization: 'Bearer nope' }, pay(1));
  await call('policy: activate bad body', 'POST', `${M}/policy/activate`, authorKey, { version: 'one' });
  await call('executions: bad status', 'GET', `${M}/executions?status=MAYBE`, machine);
  await call('approvals: bad filter', 'GET', `${M}/approvals?status=nope&agent=x`, machine);
  await call('proof: unknown event', 'GET', `${M}/audit/aud_00000000000000000000000000/proof`, auditorKey);
  await call('proof: malformed id', 'GET', `${M}/audit/nope/proof`, auditorKey);
  await call('other project', 'GET', `/v1/projects/prj_00000000000000000000000000/policy`, machine);

  // Replay of the decisions recorded so far against each version and an unsaved document.
  await call('policy: replay v1', 'POST', `${M}/policy/replay`, authorKey, { version: 1 });
  await call('policy: replay document', 'POST', `${C}/policy/replay`, author.post, { policy: { spec_version: '1', rules: [POLICY.rules[3]] }, last: 30 });
  // A window in other offsets than UTC: compared as instants on both engines, not as text.
  await call('policy: replay window in offsets', 'POST', `${M}/policy/replay`, authorKey, { version: 1, from: withOffset(midAt, 330), until: withOffset(Date.now() + 86_400_000, -480) });
  await call('policy: replay window ending at mid', 'POST', `${M}/policy/replay`, authorKey, { version: 1, until: withOffset(midAt, -90) });
  await call('policy: replay window reversed', 'POST', `${M}/policy/replay`, authorKey, { version: 1, from: withOffset(midAt, 60), until: withOffset(midAt - 1000, 0) });
  await call('policy: replay window in microseconds', 'POST', `${M}/policy/replay`, authorKey, { version: 1, from: '2026-01-01T00:00:00.123456Z' });
  for (const [from, until] of [['0001-01-01T00:00:00+01:00', '9999-12-31T23:59:59.999-01:00'], ['0000-01-01T00:00:00Z', undefined], [undefined, '1970-01-01T00:00:00.000Z'], ['2026-02-30T00:00:00Z', undefined], ['2026-01-01T24:00:00Z', undefined], ['2026-01-01t00:00:00z', undefined], ['2026-01-01T00:00:60Z', undefined]]) {
    await call(`policy: replay window ${from} ${until}`, 'POST', `${M}/policy/replay`, authorKey, { version: 2, ...(from ? { from } : {}), ...(until ? { until } : {}) });
  }
  await permitOf('the last instant', { agent: a5.did, actions: ['pay'], resources: ['resource://shop/*'], expires_at: '9999-12-31T23:59:59.999Z' });
  await permitOf('past the last instant', { agent: a5.did, actions: ['pay'], resources: ['resource://shop/*'], expires_at: '9999-12-31T23:59:59.999-01:00' });
  await call('policy: replay bad', 'POST', `${M}/policy/replay`, authorKey, { version: 1, policy: POLICY });

  // The audit log: sequence everything, then every list route paged and proofs of each event.
  const endSize = (await svc.auditLog.tick({ force: true })).checkpoint!;
  const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const lists: string[] = [];
  for (const [template, ops] of Object.entries<any>(doc.paths)) {
    const names = (ops.get?.parameters ?? []).filter((q: any) => q.in === 'query').map((q: any) => q.name);
    if (names.includes('cursor') && names.includes('limit')) lists.push(template);
  }
  assert.ok(lists.length >= 14, `list routes: ${lists.join(', ')}`);
  const filters: Record<string, string[]> = {
    approvals: ['status=pending', 'status=approved', 'status=consumed', 'status=withdrawn', 'status=expired', 'status=lapsed', `agent=${encodeURIComponent(a1.did)}`],
    executions: ['status=SUCCEEDED', 'status=FAILED', 'status=UNKNOWN', 'status=IN_FLIGHT'],
    permits: [`agent=${encodeURIComponent(a2.did)}`],
  };
  for (const template of lists) {
    const url = template.replace('{projectId}', p).replace('{principalId}', approverPerson.principalId);
    const headers = template.startsWith('/v1/console/') ? admin.get : auditorKey;
    const kind = template.split('/').at(-1)!;
    for (const filter of ['', ...(filters[kind] ?? [])]) {
      for (const limit of [2, 500]) {
        // A walk is one step: its pages' items in order, how many pages, and any refusal.
        const items: unknown[] = [];
        const statuses: number[] = [];
        let cursor: string | null = null;
        do {
          const q: string = [filter, `limit=${limit}`, cursor ? `cursor=${encodeURIComponent(cursor)}` : ''].filter(Boolean).join('&');
          const res = await svc.app.inject({ method: 'GET', url: `${url}?${q}`, headers });
          const body: Record<string, unknown> & { next_cursor?: string | null } = res.json();
          statuses.push(res.statusCode);
          items.push(...(Object.entries(body).find(([k, v]) => k !== 'next_cursor' && Array.isArray(v))?.[1] as unknown[] ?? [body]));
          cursor = body.next_cursor ?? null;
        } while (cursor && statuses.length < 40);
        steps.push({ label: `list ${template}?${filter}&limit=${limit}`, status: Math.max(...statuses), body: { pages: statuses.length, items: kind === 'permits' ? tiesByAgent(items as PermitItem[]) : items } });
      }
    }
    await call(`list ${template} bad limit`, 'GET', `${url}?limit=0`, headers);
    await call(`list ${template} bad cursor`, 'GET', `${url}?cursor=garbage`, headers);
  }
  const audit = await call('audit: all', 'GET', `${M}/audit?limit=500`, auditorKey);
  for (const e of audit.items as { id: string }[]) {
    await call(`proof ${e.id}`, 'GET', `${M}/audit/${e.id}/proof`, auditorKey);
  }
  const first = (audit.items as { id: string }[]).at(-1)!;
  await call('proof: verify', 'POST', `${C}/proofs/verify`, admin.post, { audit_event_id: first.id });
  await call('audit log', 'GET', `${M}/audit/log`, auditorKey);
  await call('audit consistency too far', 'GET', `${M}/audit/consistency?from=1&to=${endSize + 1}`, auditorKey);
  await call('audit consistency', 'GET', `${M}/audit/consistency?from=${midSize}&to=${endSize}`, auditorKey);
  for (const view of ['me', 'settings', 'control-plane', 'dashboard']) await call(`console ${view}`, 'GET', `${C}/${view}`, admin.get);
  await call('console projects', 'GET', '/v1/console/projects', admin.get);
  return steps;
}

const ID = /\b(prj|prn|key|ses|aud|dec|req|exe|pol|apr|apv|apk|agt|pmt|chk|evt|frz|res|cred|chl)_[0-9a-z]{26}\b/g;
// Only the wire's one spelling of a time: another (no milliseconds, an offset) is a difference.
const TIME = /\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;
/** A time at an offset, as a request gave it (echoed back as sent). */
const OFFSET_TIME = /\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;
/** A SHA-256 in base64 (tree hashes and roots of the audit log). */
const B64_HASH = /^[A-Za-z0-9+/]{43}=$/;
const HEX = /\b[0-9a-f]{64}\b/g;
const JWS = /eyJ[\w-]+\.[\w-]*\.[\w-]+(~eyJ[\w-]+\.[\w-]*\.[\w-]+)*/g;
/** Members whose whole value is minted afresh on every run (keys, signatures, cursors). */
const VOLATILE = new Set(['secret', 'csrf_token', 'next_cursor', 'signature', 'root_hash', 'hash', 'leaf_hash', 'checkpoint', 'note_signature', 'vkey', 'public_key', 'log_public_key', 'statement_signature', 'cosignature', 'root', 'log_vkey', 'origin', 'from_checkpoint', 'to_checkpoint']);

/** Renames what must differ between runs, consistently within one transcript. */
function normalise(steps: Step[]): Step[] {
  const names = new Map<string, string>();
  const counters = new Map<string, number>();
  const rename = (kind: string, value: string) => {
    let n = names.get(value);
    if (!n) { n = `<${kind}#${(counters.get(kind) ?? 0) + 1}>`; counters.set(kind, (counters.get(kind) ?? 0) + 1); names.set(value, n); }
    return n;
  };
  const str = (s: string) => s.replace(JWS, (m) => rename('jws', m)).replace(ID, (m, prefix: string) => rename(prefix, m)).replace(TIME, '<time>').replace(OFFSET_TIME, '<time at an offset>').replace(HEX, (m) => rename('hex', m)).replace(UUID, (m) => rename('uuid', m));
  const walk = (v: unknown, key = ''): unknown => {
    if (typeof v === 'string') return VOLATILE.has(key) ? rename(key, v) : B64_HASH.test(v) ? rename('sha256', v) : str(v);
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (v && typeof v === 'object') {
      // A permit's times in Unix seconds: those the scenario sets relative to now are kept relative to
      // its iat, in minutes (the test's clock and the server's may cross a second between the request
      // and the signature); those it sets absolutely (years away) are kept as they are, since minutes
      // from an iat that differs by seconds between runs would round either way.
      const iat = (v as { iat?: unknown }).iat;
      const YEAR = 366 * 86_400;
      const relative = (x: number) => (Math.abs(x - (iat as number)) > YEAR ? `unix ${x}` : `iat+${Math.round((x - (iat as number)) / 60)}min`);
      const unix = (k: string, x: unknown) => (typeof iat === 'number' && typeof x === 'number' && ['iat', 'nbf', 'exp'].includes(k) ? relative(x) : walk(x, k));
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, unix(k, x)]));
    }
    return v;
  };
  return steps.map((s) => ({ label: str(s.label), status: s.status, body: walk(s.body) }));
}

const engines = backends();
test(`the same scenario answers the same on ${engines.map((b) => b.name).join(' and ')}`, async () => {
  const runs: Step[][] = [];
  for (const backend of engines) runs.push(normalise(await transcript(backend)));
  const [reference, ...others] = runs;
  assert.ok(reference!.length > 300, `scenario steps: ${reference!.length}`);
  for (const other of others) {
    assert.equal(other.length, reference!.length, 'both runs took the same number of steps');
    const differ = reference!.flatMap((s, i) => (JSON.stringify(s) === JSON.stringify(other[i]) ? [] : [i]));
    if (differ.length > 0) {
      const i = differ[0]!;
      assert.deepEqual(other[i], reference![i], `${differ.length} steps differ between engines (${differ.map((d) => reference![d]!.label).slice(0, 20).join(' | ')}); first: ${reference![i]!.label}`);
    }
  }
});
