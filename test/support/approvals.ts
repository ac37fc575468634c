// Fixtures for approval tests: real APPROVER members with real Ed25519 approval keys registered
// through the service, and signatures over the statement the service itself publishes.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { newId } from '../../src/lib/ids.ts';
import { registerApprovalKey } from '../../src/services/approvals/keys.ts';
import type { TestService } from './service.ts';

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

/** An obligation row as the authorizer writes it, without going through a decision (role matrix). */
export async function seedObligation(svc: TestService, over: { expiresAt?: Date } = {}): Promise<string> {
  const id = newId('apr');
  const now = new Date();
  await svc.ts.store.db.insertInto('approval_requests').values({
    id, project_id: svc.projectId, decision_id: newId('dec'), agent: 'did:key:z6MkSeededAgentForTheMatrix', action: 'pay',
    resource: 'resource://shop/1', amount_minor: 50_000, amount_currency: 'EUR', intent: null, permit_commitment: null,
    policy_version: 1, matched_rules: '["pay-large-needs-person"]', status: 'pending', created_at: now.toISOString(),
    expires_at: (over.expiresAt ?? new Date(now.getTime() + 3600_000)).toISOString(),
  }).execute();
  return id;
}
