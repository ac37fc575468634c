import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { issuePermit } from '../../../src/domain/permit/issue.ts';
import { verifyPermit } from '../../../src/domain/permit/verify.ts';
import { verifyPermitSignatures } from '../../../src/domain/permit/verify-signatures.ts';
import { checkPermitTime } from '../../../src/domain/permit/check-time.ts';
import { permitCommitment } from '../../../src/domain/permit/commitment.ts';
import { permitKeyId } from '../../../src/domain/permit/key-id.ts';
import { signPermitClaims } from '../../../src/domain/permit/compact.ts';
import { PermitError } from '../../../src/domain/permit/types.ts';
import type { VerifyResult } from '../../../src/domain/permit/types.ts';
import { KEY, NOW, PROJECT, T0, decodePayload, fixture, memorySigner, rootInput, tamper, tamperSigned } from './helpers.ts';

function failure(r: VerifyResult) {
  assert.equal(r.ok, false, 'expected verification to fail');
  return r as Extract<VerifyResult, { ok: false }>;
}

test('a root permit issued through the Signer verifies, with its commitment and claims', async () => {
  const f = await fixture();
  const r = await verifyPermit(f.root, f.ctx(f.alice.did));
  assert.ok(r.ok);
  const p = r.permit;
  assert.equal(p.commitment, permitCommitment(f.root));
  assert.match(p.commitment, /^[0-9a-f]{64}$/);
  assert.deepEqual(p.chain, [p.commitment]);
  assert.equal(p.delegation_depth, 0);
  assert.equal(p.agent, f.alice.did);
  assert.equal(p.project_id, PROJECT);
  assert.equal(p.claims.iss, `gavel:project:${PROJECT}`);
  assert.equal(p.claims.nbf, T0); // defaults to iat
  assert.equal(p.expires_at, T0 + 3600);
  assert.deepEqual(p.claims.gavel.budget, { minor: 50_000, currency: 'EUR' });
});

test('the header is {alg: EdDSA, typ: gavel-permit+jwt, kid: RFC 7638 thumbprint}', async () => {
  const f = await fixture();
  const header = JSON.parse(Buffer.from(f.root.split('.')[0] as string, 'base64url').toString('utf8'));
  assert.deepEqual(header, { alg: 'EdDSA', typ: 'gavel-permit+jwt', kid: permitKeyId(f.projectKey) });
});

test('permitKeyId matches the RFC 8037 appendix A.3 thumbprint', () => {
  const x = Buffer.from('11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', 'base64url');
  assert.equal(permitKeyId(new Uint8Array(x)), 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k');
});

test('a tampered payload fails the signature check', async () => {
  const f = await fixture();
  const forged = tamper(f.root, { payload: (p) => ((p.gavel as { actions: string[] }).actions = ['*']) });
  const r = failure(await verifyPermit(forged, f.ctx(f.alice.did)));
  assert.equal(r.check, 'signature');
  assert.equal(r.link, 0);
});

test('a flipped signature byte fails the signature check', async () => {
  const f = await fixture();
  const [h, p, s] = f.root.split('.') as [string, string, string];
  const sig = Buffer.from(s, 'base64url');
  sig[10] = (sig[10] as number) ^ 1;
  const r = failure(await verifyPermit(`${h}.${p}.${sig.toString('base64url')}`, f.ctx(f.alice.did)));
  assert.equal(r.check, 'signature');
});

test('a permit from another project key fails (kid names another key)', async () => {
  const f = await fixture();
  const other = await issuePermit(memorySigner(), KEY, rootInput(f.alice.did));
  assert.equal(failure(await verifyPermit(other, f.ctx(f.alice.did))).check, 'signature');
});

test('a permit signed by another key under the project kid fails the signature check', async () => {
  const f = await fixture();
  const impostor = memorySigner();
  const payload = decodePayload(f.root) as never;
  const forged = await signPermitClaims(payload, permitKeyId(f.projectKey), (m) => impostor.sign('x', m));
  assert.equal(failure(await verifyPermit(forged, f.ctx(f.alice.did))).check, 'signature');
});

test('wrong audience, wrong issuer and wrong subject are named', async () => {
  const f = await fixture();
  const otherProject = await issuePermit(f.signer, KEY, rootInput(f.alice.did, { aud: 'prj_other' }));
  assert.equal(failure(await verifyPermit(otherProject, f.ctx(f.alice.did))).check, 'audience');

  const badIssuer = await signPermitClaims({ ...decodePayload(f.root), iss: 'gavel:project:prj_other' } as never, permitKeyId(f.projectKey), (m) =>
    f.signer.sign(KEY, m),
  );
  assert.equal(failure(await verifyPermit(badIssuer, f.ctx(f.alice.did))).check, 'issuer');

  const r = failure(await verifyPermit(f.root, f.ctx(f.bob.did)));
  assert.equal(r.check, 'subject_mismatch');
  assert.ok(!r.detail.includes(f.alice.did.slice(9)), 'detail names no DID');
});

test('not before nbf: not_yet_valid; at and after exp: expired; the window is [nbf, exp)', async () => {
  const f = await fixture();
  const later = await issuePermit(f.signer, KEY, rootInput(f.alice.did, { nbf: T0 + 600 }));
  assert.equal(failure(await verifyPermit(later, f.ctx(f.alice.did, new Date((T0 + 599) * 1000)))).check, 'not_yet_valid');
  assert.ok((await verifyPermit(later, f.ctx(f.alice.did, new Date((T0 + 600) * 1000)))).ok);
  assert.ok((await verifyPermit(f.root, f.ctx(f.alice.did, new Date((T0 + 3600) * 1000 - 1)))).ok);
  assert.equal(failure(await verifyPermit(f.root, f.ctx(f.alice.did, new Date((T0 + 3600) * 1000)))).check, 'expired');
  assert.equal(failure(await verifyPermit(f.root, f.ctx(f.alice.did, new Date(Number.NaN)))).check, 'time_invalid');
});

test('the split: signatures once (cacheable), time on every use', async () => {
  const f = await fixture();
  const sig = await verifyPermitSignatures(f.root, { projectId: PROJECT, projectPublicKey: f.projectKey });
  assert.ok(sig.ok);
  assert.deepEqual(checkPermitTime(sig.permit, NOW), { ok: true });
  assert.equal((checkPermitTime(sig.permit, new Date((T0 + 7200) * 1000)) as { check: string }).check, 'expired');
});

test('alg none is refused by name', async () => {
  const f = await fixture();
  const [, p] = f.root.split('.') as [string, string];
  const none = `${Buffer.from('{"alg":"none","typ":"gavel-permit+jwt","kid":"x"}').toString('base64url')}.${p}.`;
  const r = failure(await verifyPermit(none, f.ctx(f.alice.did)));
  assert.equal(r.check, 'algorithm');
});

test('HS256 signed with the public key as HMAC secret (key confusion) is refused', async () => {
  const f = await fixture();
  const [, p] = f.root.split('.') as [string, string];
  const h = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'gavel-permit+jwt', kid: permitKeyId(f.projectKey) })).toString('base64url');
  const mac = createHmac('sha256', f.projectKey).update(`${h}.${p}`).digest('base64url');
  assert.equal(failure(await verifyPermit(`${h}.${p}.${mac}`, f.ctx(f.alice.did))).check, 'algorithm');
});

test('unknown header parameters (crit, jwk) and a wrong typ are refused', async () => {
  const f = await fixture();
  const crit = tamper(f.root, { header: (h) => ((h.crit = ['exp']), (h.exp = 1)) });
  assert.equal(failure(await verifyPermit(crit, f.ctx(f.alice.did))).check, 'header');
  const jwk = tamper(f.root, { header: (h) => (h.jwk = { kty: 'OKP' }) });
  assert.equal(failure(await verifyPermit(jwk, f.ctx(f.alice.did))).check, 'header');
  const typ = tamper(f.root, { header: (h) => (h.typ = 'JWT') });
  assert.equal(failure(await verifyPermit(typ, f.ctx(f.alice.did))).check, 'header');
});

test('malformed inputs: garbage, bad base64url, bad JSON, wrong part count, non-strings', async () => {
  const f = await fixture();
  const [h, p, s] = f.root.split('.') as [string, string, string];
  const cases: Array<[unknown, string]> = [
    ['', 'malformed'],
    ['garbage', 'malformed'],
    ['a.b', 'malformed'],
    [`${h}.${p}.${s}.x`, 'malformed'],
    [`${h}!.${p}.${s}`, 'malformed'],
    [`${h}.${p}.${s}=`, 'malformed'],
    [`${h}.${p}.${s}`.replace(/^./, '+'), 'malformed'],
    [`${Buffer.from('not json').toString('base64url')}.${p}.${s}`, 'malformed'],
    [`${Buffer.from('[1]').toString('base64url')}.${p}.${s}`, 'malformed'],
    [`${h}.${Buffer.from('{"iss":').toString('base64url')}.${s}`, 'malformed'],
    [`${h}.${Buffer.from(Uint8Array.from([0xff, 0xfe])).toString('base64url')}.${s}`, 'malformed'],
    [`${h}.${p}.${s.slice(0, 20)}`, 'signature'],
    [`${f.root}~`, 'malformed'],
    [`~${f.root}`, 'malformed'],
    [null, 'malformed'],
    [42, 'malformed'],
    [{ toString: () => f.root }, 'malformed'],
    ['x'.repeat(16 * 1024 + 1), 'too_large'],
  ];
  for (const [input, check] of cases) {
    assert.equal(failure(await verifyPermit(input, f.ctx(f.alice.did))).check, check, String(input).slice(0, 60));
  }
});

test('typ is compared as RFC 7515 §4.1.9 says: "application/" implied, case-insensitive; another type or a parameter is refused', async () => {
  const f = await fixture();
  const withTyp = (typ: string) => tamperSigned(f, f.root, { header: (h) => { h.typ = typ; } });
  for (const typ of ['application/gavel-permit+jwt', 'Gavel-Permit+JWT', 'Application/GAVEL-PERMIT+JWT']) {
    const r = await verifyPermit(await withTyp(typ), f.ctx(f.alice.did));
    assert.ok(r.ok, `${typ}: ${JSON.stringify(r)}`);
  }
  for (const typ of ['application/gavel-permit+jwt; v=2', 'text/gavel-permit+jwt', 'gavel-permit+jwt ', 'application/application/gavel-permit+jwt', 'jwt', '']) {
    assert.equal(failure(await verifyPermit(await withTyp(typ), f.ctx(f.alice.did))).check, 'header', JSON.stringify(typ));
  }
});

test('alg "Ed25519" (RFC 9864, the fully specified name JOSE libraries now write) verifies as "EdDSA" does; "ed25519", "Ed448" and "EdDSA " do not', async () => {
  const f = await fixture();
  const withAlg = (alg: string) => tamperSigned(f, f.root, { header: (h) => { h.alg = alg; } });
  const r = await verifyPermit(await withAlg('Ed25519'), f.ctx(f.alice.did));
  assert.ok(r.ok, JSON.stringify(r));
  for (const alg of ['ed25519', 'Ed448', 'EdDSA ', 'ES256']) {
    assert.equal(failure(await verifyPermit(await withAlg(alg), f.ctx(f.alice.did))).check, 'algorithm', alg);
  }
});

test('a member named twice, in the header or anywhere in the payload, is malformed even under a valid signature (I-JSON)', async () => {
  const f = await fixture();
  const [h, p] = f.root.split('.') as [string, string];
  const header = Buffer.from(h, 'base64url').toString('utf8');
  const payload = Buffer.from(p, 'base64url').toString('utf8');
  const signed = async (ht: string, pt: string) => {
    const hh = Buffer.from(ht).toString('base64url');
    const pp = Buffer.from(pt).toString('base64url');
    return `${hh}.${pp}.${Buffer.from(await f.signer.sign(KEY, new TextEncoder().encode(`${hh}.${pp}`))).toString('base64url')}`;
  };
  // Both read the same to JSON.parse (the last value wins), and both verify without the check.
  const twiceInGavel = payload.replace('"gavel":{', '"gavel":{"actions":["*"],');
  assert.notEqual(twiceInGavel, payload);
  const r = failure(await verifyPermit(await signed(header, twiceInGavel), f.ctx(f.alice.did)));
  assert.deepEqual([r.check, r.detail], ['malformed', 'the payload names a member twice (/gavel/actions)']);
  const twiceInHeader = header.replace('{', '{"typ":"gavel-permit+jwt",');
  assert.equal(failure(await verifyPermit(await signed(twiceInHeader, payload), f.ctx(f.alice.did))).check, 'malformed');
  assert.equal((await verifyPermit(await signed(header, payload), f.ctx(f.alice.did))).ok, true, 'the same texts without the repeat verify');
});

test('payloads of the wrong shape are refused as claims', async () => {
  const f = await fixture();
  const sign = (c: unknown) => signPermitClaims(c as never, permitKeyId(f.projectKey), (m) => f.signer.sign(KEY, m));
  const base = decodePayload(f.root);
  const g = base.gavel as Record<string, unknown>;
  const variants: Array<Record<string, unknown>> = [
    { ...base, extra: 1 },
    { ...base, sub: 'alice' },
    { ...base, exp: T0 + 1.5 },
    { ...base, nbf: T0 + 3600 },
    { ...base, gavel: { ...g, actions: [] } },
    { ...base, gavel: { ...g, actions: ['pay*'] } },
    { ...base, gavel: { ...g, resources: ['https://x/*'] } },
    { ...base, gavel: { ...g, resources: ['resource://a*/b'] } },
    { ...base, gavel: { ...g, budget: { minor: -1, currency: 'EUR' } } },
    { ...base, gavel: { ...g, budget: { minor: 2 ** 53, currency: 'EUR' } } },
    { ...base, gavel: { ...g, budget: { minor: '5', currency: 'EUR' } } },
    { ...base, gavel: { ...g, max_per_request: { minor: 5, currency: 'eur' } } },
    { ...base, gavel: { ...g, max_uses: 0 } },
    { ...base, gavel: { ...g, parent: 'ABC' } },
    { ...base, gavel: { ...g, scope: 'all' } },
    { ...base, iss: 7 },
    { ...base, aud: '' },
    { ...base, jti: '' },
    { ...base, jti: 'j'.repeat(129) },
    { ...base, iat: 'now' },
    { ...base, nbf: -1 },
    { ...base, sub: 'did:key:z6MkNotAnEd25519Key' },
    { ...base, gavel: { ...g, actions: Array.from({ length: 65 }, (_, i) => `a${i}`) } },
    { ...base, gavel: { ...g, resources: [] } },
    { ...base, gavel: { ...g, resources: [`resource://a/${'x'.repeat(600)}`] } },
    { ...base, gavel: { ...g, max_uses: 1.5 } },
    // A member Money does not define may be a restriction this version would not enforce.
    { ...base, gavel: { ...g, budget: { minor: 5, currency: 'EUR', per: 'day' } } },
    // Limits in two currencies: every request would be denied as currency_mismatch.
    { ...base, gavel: { ...g, max_per_request: { minor: 5, currency: 'USD' }, budget: { minor: 50, currency: 'EUR' } } },
  ];
  for (const v of variants) {
    // Issuance refuses them ...
    await assert.rejects(sign(v), (e: unknown) => e instanceof PermitError && e.code === 'claims');
    // ... and so does verification of a hand-signed one.
    const [h, , s] = f.root.split('.') as [string, string, string];
    const forged = `${h}.${Buffer.from(JSON.stringify(v)).toString('base64url')}.${s}`;
    assert.equal(failure(await verifyPermit(forged, f.ctx(f.alice.did))).check, 'claims', JSON.stringify(v).slice(0, 120));
  }
});

test('a link whose max_per_request and budget are in two currencies is refused as claims, at issuance and at verification, saying so', async () => {
  const f = await fixture();
  const base = decodePayload(f.root);
  const v = { ...base, gavel: { ...(base.gavel as Record<string, unknown>), max_per_request: { minor: 5, currency: 'USD' }, budget: { minor: 50, currency: 'EUR' } } };
  const detail = 'gavel.max_per_request and gavel.budget must be in one currency (they are in USD and EUR)';
  await assert.rejects(signPermitClaims(v as never, permitKeyId(f.projectKey), (m) => f.signer.sign(KEY, m)), (e: unknown) => e instanceof PermitError && e.code === 'claims' && e.message.includes(detail));
  // Hand-signed with the project key, as a holder of it could: verification refuses it, before any request.
  const forged = await tamperSigned(f, f.root, { payload: (p) => { p.gavel = v.gavel; } });
  const r = failure(await verifyPermit(forged, f.ctx(f.alice.did)));
  assert.deepEqual([r.check, r.detail], ['claims', detail]);
});

test('a root that names a parent is a broken chain', async () => {
  const f = await fixture();
  const p = decodePayload(f.root) as { gavel: Record<string, unknown> };
  p.gavel.parent = 'a'.repeat(64);
  const forged = await signPermitClaims(p as never, permitKeyId(f.projectKey), (m) => f.signer.sign(KEY, m));
  assert.equal(failure(await verifyPermit(forged, f.ctx(f.alice.did))).check, 'chain_broken');
});

test('a bad project key in the context is reported, not thrown', async () => {
  const f = await fixture();
  const r = failure(await verifyPermit(f.root, { ...f.ctx(f.alice.did), projectPublicKey: new Uint8Array(3) }));
  assert.equal(r.check, 'verification_error');
});
