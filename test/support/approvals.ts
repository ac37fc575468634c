// Fixtures for approval tests: real APPROVER members with real Ed25519 approval keys registered
// through the service, and signatures over the statement the service itself publishes.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { newId } from '../../src/lib/ids.ts';
import { registerApprovalKey } from '../../src/services/approvals/keys.ts';
import { startService, type TestService } from './service.ts';
import type { Backend } from './backends.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from './authorize.ts';
import { merchantsFile, startMerchant } from './merchant.ts';
import { stopBoth } from './payments.ts';

export interface Approver {
  principalId: string;
  /** An API key of the approver (roles: APPROVER). */
  key: string;
  keyId: string;
  privateKey: KeyObject;
  publicKey: string;
  /** base64url Ed25519 signature over `text` (UTF-8). */
  sign(text: string): string;
}

export function ed25519Pair(): { privateKey: KeyObject; publicKey: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKey: publicKey.export({ format: 'jwk' }).x! };
}

export const signText = (privateKey: KeyObject, text: string): string => sign(null, Buffer.from(text, 'utf8'), privateKey).toString('base64url');

/** A new member holding `roles` (APPROVER by default) with a registered approval key. */
export async function newApprover(svc: TestService, roles: Parameters<TestService['member']>[0] = ['APPROVER']): Promise<Approver> {
  const m = await svc.member(roles);
  const pair = ed25519Pair();
  const registered = await registerApprovalKey(svc.deps.store, { projectId: svc.projectId, principalId: m.principalId, publicKey: pair.publicKey, actor: 'system' }, new Date());
  return { principalId: m.principalId, key: m.key, keyId: registered.id, privateKey: pair.privateKey, publicKey: pair.publicKey, sign: (t) => signText(pair.privateKey, t) };
}

/** The agent every seeded obligation names. */
export const SEEDED_OBLIGATION_AGENT = 'did:key:z6MkSeededAgentForTheMatrix';

/** An obligation row as the authorizer writes it, without going through a decision (role matrix). */
export async function seedObligation(svc: TestService, over: { expiresAt?: Date } = {}): Promise<string> {
  const id = newId('apr');
  const now = new Date();
  await svc.ts.store.db.insertInto('approval_requests').values({
    id, project_id: svc.projectId, decision_id: newId('dec'), agent: SEEDED_OBLIGATION_AGENT, action: 'pay',
    resource: 'resource://shop/1', amount_minor: 50_000, amount_currency: 'EUR', intent: null, permit_commitment: null,
    policy_version: 1, matched_rules: '["pay-large-needs-person"]', statement_version: 2, status: 'pending', created_at: now.toISOString(),
    expires_at: (over.expiresAt ?? new Date(now.getTime() + 3600_000)).toISOString(),
  }).execute();
  return id;
}

/**
 * A service with a real merchant (`shop`), the payments policy active, an approver and an agent
 * holding a payments permit; `req` is a payment the policy sends to approval. For tests of
 * approved executions.
 */
export async function approvedCallsFixture(backend: Backend) {
  const merchant = await startMerchant();
  const svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url) }).catch(async (e: unknown) => { await merchant.close(); throw e; });
  const stop = () => stopBoth(svc, merchant);
  // A set-up step that fails stops what was started: left running, it kept the test process alive.
  const { key, approver, agent, jws } = await (async () => {
    const key = await svc.keyHeader([]);
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const approver = await newApprover(svc);
    const agent = newAgent();
    const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
    return { key, approver, agent, jws };
  })().catch(async (e: unknown) => { await stop(); throw e; });
  const req = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' } };
  const authorize = async (body: Record<string, unknown>) => (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body })).json();
  const obligation = async (id: string) => (await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/approvals?limit=500`, headers: key })).json().approvals.find((o: { id: string }) => o.id === id);
  const approve = async (id: string) => {
    const res = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/approvals`, headers: key, payload: { approval_request_id: id, key_id: approver.keyId, signature: approver.sign((await obligation(id)).statement) } });
    if (res.statusCode !== 201) throw new Error(`approving ${id}: ${res.body}`);
  };
  return { svc, merchant, key, req, authorize, obligation, approve, stop };
}
