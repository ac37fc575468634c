// Real Ed25519 keys for permit tests: a Signer over node:crypto and did:key agents.
import { generateKeyPairSync, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { Signer } from '../../../src/signer/signer.ts';
import { didKeyFromPublicKey } from '../../../src/domain/permit/did.ts';
import { issuePermit } from '../../../src/domain/permit/issue.ts';
import type { RootPermitInput } from '../../../src/domain/permit/issue.ts';
import type { SignFunction } from '../../../src/domain/permit/types.ts';
import { PERMIT_TYP } from '../../../src/domain/permit/compact.ts';

export function rawPublicKey(key: KeyObject): Uint8Array {
  const x = key.export({ format: 'jwk' }).x as string;
  return new Uint8Array(Buffer.from(x, 'base64url'));
}

export function memorySigner(): Signer {
  const keys = new Map<string, { privateKey: KeyObject; publicKey: KeyObject }>();
  const get = (name: string) => {
    let pair = keys.get(name);
    if (pair === undefined) {
      pair = generateKeyPairSync('ed25519');
      keys.set(name, pair);
    }
    return pair;
  };
  return {
    async sign(name, message) {
      return new Uint8Array(sign(null, message, get(name).privateKey));
    },
    async publicKey(name) {
      return rawPublicKey(get(name).publicKey);
    },
  };
}

export interface Agent {
  did: string;
  publicKey: Uint8Array;
  sign: SignFunction;
}

export function newAgent(): Agent {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = rawPublicKey(publicKey);
  return {
    did: didKeyFromPublicKey(raw),
    publicKey: raw,
    sign: async (message) => new Uint8Array(sign(null, message, privateKey)),
  };
}

export const PROJECT = 'prj_test';
export const KEY = 'permit:prj_test';
/** 2025-01-01T00:00:00Z */
export const T0 = 1_735_689_600;
export const NOW = new Date((T0 + 60) * 1000);

export function rootInput(agent: string, overrides: Partial<RootPermitInput> = {}): RootPermitInput {
  return {
    aud: PROJECT,
    sub: agent,
    jti: 'pmt_1',
    iat: T0,
    exp: T0 + 3600,
    gavel: {
      actions: ['payments.create', 'invoices.read'],
      resources: ['resource://payments/*', 'resource://invoices/42'],
      max_per_request: { minor: 10_000, currency: 'EUR' },
      budget: { minor: 50_000, currency: 'EUR' },
      max_uses: 10,
    },
    ...overrides,
  };
}

export interface Fixture {
  signer: Signer;
  projectKey: Uint8Array;
  alice: Agent;
  bob: Agent;
  carol: Agent;
  root: string;
  ctx: (expectedAgent: string, now?: Date) => {
    projectId: string;
    projectPublicKey: Uint8Array;
    now: Date;
    expectedAgent: string;
  };
}

export async function fixture(): Promise<Fixture> {
  const signer = memorySigner();
  const projectKey = await signer.publicKey(KEY);
  const alice = newAgent();
  const root = await issuePermit(signer, KEY, rootInput(alice.did));
  return {
    signer,
    projectKey,
    alice,
    bob: newAgent(),
    carol: newAgent(),
    root,
    ctx: (expectedAgent, now = NOW) => ({ projectId: PROJECT, projectPublicKey: projectKey, now, expectedAgent }),
  };
}

/** Re-encodes a JWS with a modified header or payload, keeping the old signature. */
export function tamper(jws: string, edit: { header?: (h: Record<string, unknown>) => void; payload?: (p: Record<string, unknown>) => void }): string {
  const [h, p, s] = jws.split('.') as [string, string, string];
  const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
  const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
  edit.header?.(header);
  edit.payload?.(payload);
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${enc(header)}.${enc(payload)}.${s}`;
}

/** `tamper`, then signed again with the project's key: an edit that only the checks, not the signature, may refuse. */
export async function tamperSigned(f: Pick<Fixture, 'signer'>, jws: string, edit: Parameters<typeof tamper>[1]): Promise<string> {
  const [h, p] = tamper(jws, edit).split('.') as [string, string];
  return `${h}.${p}.${Buffer.from(await f.signer.sign(KEY, new TextEncoder().encode(`${h}.${p}`))).toString('base64url')}`;
}

/** A link signed as signPermitClaims signs it, without its checks: what a key's holder signing by hand can make. */
export async function signUnchecked(claims: unknown, kid: string, sign: SignFunction): Promise<string> {
  const b64u = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const input = `${b64u({ alg: 'EdDSA', typ: PERMIT_TYP, kid })}.${b64u(claims)}`;
  return `${input}.${Buffer.from(await sign(new TextEncoder().encode(input))).toString('base64url')}`;
}

export function decodePayload(jws: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jws.split('.')[1] as string, 'base64url').toString('utf8'));
}
