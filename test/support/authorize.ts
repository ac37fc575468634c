// Fixtures for decision tests: real did:key agents, real permits signed by the service's signer,
// and policies saved and activated through the real routes.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import assert from 'node:assert/strict';
import { didKeyFromPublicKey, delegatePermit, type GavelConstraints } from '../../src/domain/permit/index.ts';
import { recordIssuedPermit, signRootPermit } from '../../src/services/permits/permits.ts';
import type { TestService } from './service.ts';

export interface Agent { did: string; privateKey: KeyObject; sign(m: Uint8Array): Promise<Uint8Array> }

export function newAgent(): Agent {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return { did: didKeyFromPublicKey(new Uint8Array(raw)), privateKey, sign: async (m) => new Uint8Array(sign(null, m, privateKey)) };
}

export async function issue(svc: TestService, agent: string, constraints: Omit<GavelConstraints, 'parent'>, opts: { ttlSeconds?: number; notBefore?: Date } = {}): Promise<{ jws: string; commitment: string }> {
  const now = new Date();
  const input = {
    projectId: svc.projectId, agent, constraints, actor: 'system', now,
    expiresAt: new Date(now.getTime() + (opts.ttlSeconds ?? 3600) * 1000),
    ...(opts.notBefore ? { notBefore: opts.notBefore } : {}),
  };
  const jws = await signRootPermit(svc.deps.signer, input);
  const view = await svc.deps.store.transaction((trx) => recordIssuedPermit(trx, input, jws));
  return { jws, commitment: view.commitment };
}

export async function delegate(parentChain: string, from: Agent, to: string, constraints: GavelConstraints | Omit<GavelConstraints, 'parent'>): Promise<string> {
  const iat = Math.floor(Date.now() / 1000);
  return delegatePermit(parentChain, { sub: to, jti: crypto.randomUUID(), iat, gavel: constraints as GavelConstraints }, from.sign);
}

export async function activatePolicy(svc: TestService, policy: unknown): Promise<number> {
  const author = await svc.keyHeader(['POLICY_AUTHOR']);
  const saved = await svc.app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/policy`, headers: author, payload: { policy, note: 'test' } });
  assert.ok(saved.statusCode < 300, `save policy: ${saved.statusCode} ${saved.body}`);
  const version = saved.json().version as number;
  const activated = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/policy/activate`, headers: author, payload: { version } });
  assert.ok(activated.statusCode < 300, `activate policy: ${activated.statusCode} ${activated.body}`);
  return version;
}

/** A 20-rule policy shaped like the benchmark's: action-and-amount permits, agent denies, resource windows. */
export const ALLOW_PAYMENTS = {
  spec_version: '1',
  rules: [
    { id: 'pay-small', effect: 'ALLOW', when: { op: 'and', args: [
      { op: 'eq', input: 'action', value: 'pay' },
      { op: 'lte', input: 'amount.minor', value: 10_000, currency: 'EUR' },
    ] } },
    { id: 'pay-large-needs-person', effect: 'REQUIRE_APPROVAL', when: { op: 'and', args: [
      { op: 'eq', input: 'action', value: 'pay' },
      { op: 'gt', input: 'amount.minor', value: 10_000, currency: 'EUR' },
    ] } },
    { id: 'read-docs', effect: 'ALLOW', when: { op: 'and', args: [
      { op: 'eq', input: 'action', value: 'read' },
      { op: 'matches_resource', input: 'resource', value: 'resource://docs/*' },
    ] } },
    { id: 'no-secrets', effect: 'DENY', when: { op: 'matches_resource', input: 'resource', value: 'resource://docs/secret/*' } },
  ],
};

/** The decision body of a POST /v1/authorize the route must answer with 200 (a decision, not a refusal). */
export interface Decided { decision: string; reason_code: string; detail?: string; audit_id: string; policy_version: number | null }
export async function decide(svc: TestService, headers: { authorization: string }, payload: Record<string, unknown>): Promise<Decided> {
  const res = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers, payload });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Decided;
}
