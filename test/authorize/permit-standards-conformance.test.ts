// Conformance of permits and approval signatures to the standards docs/permits.md and
// docs/approvals.md claim, checked by an auditor's verifier that shares no code with src/
// (./independent-permit-verifier.ts: node:crypto, and openssl as a second Ed25519). A real service
// issues permits through the console route; agents whose keys openssl made delegate them with
// links built and signed here, and the service must accept them; an approver whose key openssl
// made registers it as an RFC 8037 JWK and signs the published statement with `openssl pkeyutl
// -sign -rawin`, and the service must accept the approval.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { activatePolicy, ALLOW_PAYMENTS, decide } from '../support/authorize.ts';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { startService } from '../support/service.ts';
import * as v from './independent-permit-verifier.ts';

test('the independent verifier agrees with itself: base58btc, did:key, strict base64url, both Ed25519 implementations', () => {
  // The did:key spec's Ed25519 test vector prefix: 0xed 0x01 encodes to "6Mk" in base58btc.
  const key = v.opensslKey();
  assert.match(key.did, /^did:key:z6Mk[1-9A-HJ-NP-Za-km-z]{44}$/);
  assert.deepEqual(v.didKeyToRaw(key.did), key.raw);
  assert.deepEqual(v.base58btcDecode(v.base58btcEncode(Buffer.from([0, 0, 1, 2, 255]))), Buffer.from([0, 0, 1, 2, 255]));
  assert.equal(v.base58btcEncode(Buffer.from('Hello World!')), '2NEpo7TZRRrLZSi2U', 'the draft-msporny-base58 example');
  assert.throws(() => v.didKeyToRaw(`did:key:z${v.base58btcEncode(Buffer.concat([Buffer.from([0xec, 0x01]), key.raw]))}`), v.VerifierError, 'X25519 is not Ed25519');
  assert.throws(() => v.b64uDecode('AB=='), v.VerifierError);
  assert.throws(() => v.b64uDecode('AB+/'), v.VerifierError);
  assert.throws(() => v.b64uDecode('AF'), v.VerifierError, 'non-canonical trailing bits');
  const msg = Buffer.from('message');
  const sig = key.sign(msg);
  assert.equal(sig.length, 64);
  assert.ok(v.verifyWithNode(key.raw, msg, sig) && v.verifyWithOpenssl(key.raw, msg, sig));
  const bad = Buffer.from(sig); bad[0]! ^= 1;
  assert.ok(!v.verifyWithNode(key.raw, msg, bad) && !v.verifyWithOpenssl(key.raw, msg, bad));
  assert.equal(v.jcs({ b: [1, 'é', null], a: { d: true, c: -0.5 } }), '{"a":{"c":-0.5,"d":true},"b":[1,"é",null]}');
});

for (const backend of backends()) {
  test(`permits and approvals interoperate with standard tools: RFC 7515/7519/8037/7638, did:key, RFC 8785, openssl (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const P = svc.projectId;
      const C = `/v1/console/projects/${P}`;
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
      const key = await svc.keyHeader([]);

      // Agents as a third party makes them: openssl keys, did:key by our own base58btc.
      const [a, b, c] = [v.opensslKey(), v.opensslKey(), v.opensslKey()];

      // --- a root permit through the console, with a fractional expiry and not-before ---
      const nowS = Math.floor(Date.now() / 1000);
      const issued = await svc.app.inject({ method: 'POST', url: `${C}/permits`, headers: issuer.post, payload: {
        agent: a.did, actions: ['pay', 'read'], resources: ['resource://shop/*'],
        max_per_request: { minor: 60_000, currency: 'EUR' }, budget: { minor: 200_000, currency: 'EUR' }, max_uses: 20,
        not_before: new Date((nowS - 5) * 1000 + 250).toISOString(), expires_at: new Date((nowS + 3600) * 1000 + 999).toISOString(),
      } });
      assert.equal(issued.statusCode, 201, issued.body);
      const { permit: rootJws, commitment: rootCommitment } = issued.json();
      // The project's permit key, as the database records its public half (decision 0025).
      const row = await svc.ts.store.db.selectFrom('signer_keys').select(['public_key']).where('name', '=', `permit-${P}`).executeTakeFirst();
      assert.ok(row, 'the permit key is recorded once a permit is signed');
      const projectKey = v.b64uDecode(row.public_key);
      assert.equal(projectKey.length, 32);

      const [root] = v.verifyChain(rootJws, { projectId: P, projectKey });
      assert.ok(root);
      assert.equal(root.commitment, rootCommitment, 'permit_commitment is SHA-256 (hex) of the compact JWS bytes');
      assert.deepEqual(Object.keys(root.header), ['alg', 'typ', 'kid']);
      assert.equal(root.claims.sub, a.did);
      assert.deepEqual(v.didKeyToRaw(root.claims.sub), a.raw, 'sub names the agent\'s key');
      assert.equal(root.claims.aud, P);
      assert.match(root.claims.jti, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'jti: a random UUID');
      assert.equal(root.claims.nbf, nowS - 4, 'nbf: the requested not_before (250 ms into a second) rounded up to the next whole second');
      assert.equal(root.claims.exp, nowS + 3600, 'exp: the requested expires_at in whole seconds');
      assert.ok(Math.abs(root.claims.iat - nowS) <= 5, 'iat: the issuance time in seconds');
      assert.deepEqual(root.claims.gavel, {
        actions: ['pay', 'read'], resources: ['resource://shop/*'],
        max_per_request: { minor: 60_000, currency: 'EUR' }, budget: { minor: 200_000, currency: 'EUR' }, max_uses: 20,
      });
      const view = (await svc.app.inject({ method: 'GET', url: `${C}/permits/${rootCommitment}`, headers: issuer.get })).json();
      assert.deepEqual(view.claims, root.claims, 'the console shows the signed claims');
      assert.equal(view.expires_at, new Date(root.claims.exp * 1000).toISOString());

      // A tampered root fails the independent verifier (it is not vacuous) and the service.
      const [h, p, s] = rootJws.split('.');
      const flipped = `${h}.${p}.${v.b64uEncode(Buffer.from(v.b64uDecode(s).map((x: number, i: number) => (i === 0 ? x ^ 1 : x))))}`;
      assert.throws(() => v.verifyChain(flipped, { projectId: P, projectKey }), v.VerifierError);
      const pay = (agent: string, permit: string, minor: number, extra: Record<string, unknown> = {}) =>
        decide(svc, key, { agent, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor, currency: 'EUR' }, ...extra });
      assert.equal((await pay(a.did, flipped, 100)).reason_code, 'permit_invalid');
      assert.equal((await pay(a.did, rootJws, 100)).decision, 'ALLOW');

      // --- delegation with standard tools: links built here, signed by openssl ---
      const child = (parent: v.Link, from: v.OpensslKey, to: v.OpensslKey, gavel: Record<string, unknown>) => v.signLink(
        { alg: 'EdDSA', typ: v.PERMIT_TYP, kid: v.didKeyVerificationMethod(from.did) },
        { iss: from.did, sub: to.did, aud: P, jti: randomUUID(), iat: nowS, nbf: parent.claims.nbf, exp: parent.claims.exp - 60, gavel: { ...gavel, parent: parent.commitment } },
        from.sign,
      );
      const ab = child(root, a, b, { actions: ['pay'], resources: ['resource://shop/*'], max_per_request: { minor: 50_000, currency: 'EUR' }, budget: { minor: 100_000, currency: 'EUR' }, max_uses: 10 });
      const chain1 = `${rootJws}~${ab}`;
      const links1 = v.verifyChain(chain1, { projectId: P, projectKey });
      const bc = child(links1[1]!, b, c, { actions: ['pay'], resources: ['resource://shop/1'], max_per_request: { minor: 50_000, currency: 'EUR' }, budget: { minor: 80_000, currency: 'EUR' }, max_uses: 5 });
      const chain2 = `${chain1}~${bc}`;
      const links2 = v.verifyChain(chain2, { projectId: P, projectKey });
      assert.equal(links2.length, 3);

      const byB = await pay(b.did, chain1, 100);
      assert.equal(byB.decision, 'ALLOW', JSON.stringify(byB));
      const byC = await pay(c.did, chain2, 100);
      assert.equal(byC.decision, 'ALLOW', JSON.stringify(byC));
      // The service recorded each link under the commitment computed here, naming its parent's.
      for (const [i, link] of links2.entries()) {
        if (i === 0) continue;
        const rec = await svc.app.inject({ method: 'GET', url: `${C}/permits/${link.commitment}`, headers: issuer.get });
        assert.equal(rec.statusCode, 200, `link ${i} recorded under its SHA-256: ${rec.body}`);
        assert.equal(rec.json().agent, link.claims.sub);
      }
      // RFC 7515 §4.1.9: a recipient treats a typ without '/' as if "application/" were prepended,
      // and media types are case-insensitive (RFC 2045): the long and the capitalised spelling name
      // the same type, and a delegator whose JOSE library writes either must be understood.
      for (const typ of ['application/gavel-permit+jwt', 'Gavel-Permit+JWT', 'APPLICATION/gavel-permit+JWT']) {
        const link = v.signLink(
          { alg: 'EdDSA', typ, kid: v.didKeyVerificationMethod(b.did) },
          { iss: b.did, sub: c.did, aud: P, jti: randomUUID(), iat: nowS, nbf: links1[1]!.claims.nbf, exp: links1[1]!.claims.exp,
            gavel: { actions: ['pay'], resources: ['resource://shop/1'], max_per_request: { minor: 10, currency: 'EUR' }, budget: { minor: 10, currency: 'EUR' }, max_uses: 1, parent: links1[1]!.commitment } },
          b.sign,
        );
        const typed = await pay(c.did, `${chain1}~${link}`, 1);
        assert.equal(typed.decision, 'ALLOW', `typ ${typ}: ${JSON.stringify(typed)}`);
      }
      for (const typ of ['application/gavel-permit+jwt;v=2', 'application/other+jwt', 'text/gavel-permit+jwt', 'JWT']) {
        const link = v.signLink({ alg: 'EdDSA', typ, kid: v.didKeyVerificationMethod(b.did) },
          { iss: b.did, sub: c.did, aud: P, jti: randomUUID(), iat: nowS, nbf: links1[1]!.claims.nbf, exp: links1[1]!.claims.exp, gavel: { actions: ['pay'], resources: ['resource://shop/1'], max_per_request: { minor: 10, currency: 'EUR' }, budget: { minor: 10, currency: 'EUR' }, max_uses: 1, parent: links1[1]!.commitment } },
          b.sign);
        const other = await pay(c.did, `${chain1}~${link}`, 1);
        assert.deepEqual([other.reason_code, other.detail?.split(':')[0]], ['permit_invalid', 'header'], `typ ${typ} names another type`);
      }
      // A link signed by the wrong holder: both verifiers and the service refuse it.
      const forged = child(links1[1]!, c, c, { actions: ['pay'], resources: ['resource://shop/1'], max_per_request: { minor: 1, currency: 'EUR' }, budget: { minor: 1, currency: 'EUR' }, max_uses: 1 })
        .replace(/^[^.]+/, v.b64uEncode(Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: v.PERMIT_TYP, kid: v.didKeyVerificationMethod(b.did) }))));
      assert.throws(() => v.verifyChain(`${chain1}~${forged}`, { projectId: P, projectKey }), v.VerifierError);
      assert.equal((await pay(c.did, `${chain1}~${forged}`, 1)).reason_code, 'permit_invalid');

      // --- an approval made with standard tools, as docs/approvals.md instructs ---
      const person = await consoleMember(svc, ['APPROVER']);
      const approverKey = v.opensslKey();
      const registered = await svc.app.inject({ method: 'POST', url: `${C}/principals/${person.principalId}/approval-keys`, headers: person.post, payload: { public_key: v.okpJwk(approverKey.raw) } });
      assert.equal(registered.statusCode, 201, registered.body);
      const keyId = registered.json().id as string;
      assert.equal(registered.json().public_key, v.b64uEncode(approverKey.raw));

      const large = await pay(a.did, rootJws, 50_000);
      assert.equal(large.decision, 'REQUIRE_APPROVAL', JSON.stringify(large));
      const aprId = (large as unknown as { approval_request_id: string }).approval_request_id;
      const list = await svc.app.inject({ method: 'GET', url: `/v1/projects/${P}/approvals?limit=500`, headers: key });
      const obligation = list.json().approvals.find((o: { id: string }) => o.id === aprId);
      const statement = obligation.statement as string;
      const parsed = JSON.parse(statement);
      assert.equal(statement, v.jcs(parsed), 'the statement is RFC 8785 canonical JSON');
      assert.deepEqual(parsed, {
        type: 'gavel-approval/v1', approval_request_id: aprId, project_id: P, agent: a.did, action: 'pay', resource: 'resource://shop/1',
        amount: { minor: 50_000, currency: 'EUR' }, intent: null, policy_version: obligation.policy_version, matched_rules: ['pay-large-needs-person'], expires_at: obligation.expires_at,
      });
      const signature = approverKey.sign(Buffer.from(statement, 'utf8'));
      v.verifyEd25519(approverKey.raw, Buffer.from(statement, 'utf8'), signature, 'approval');
      const recorded = await svc.app.inject({ method: 'POST', url: `/v1/projects/${P}/approvals`, headers: key, payload: { approval_request_id: aprId, key_id: keyId, signature: v.b64uEncode(signature) } });
      assert.equal(recorded.statusCode, 201, recorded.body);
      const granted = await pay(a.did, rootJws, 50_000, { approval_request_id: aprId });
      assert.deepEqual([granted.decision, granted.reason_code], ['ALLOW', 'approval_granted']);
    } finally {
      await svc.stop();
    }
  });
}

/** The shell block of docs/approvals.md's "Signing with standard tools", run as written in a fresh directory. */
function runDocumentedRecipe(statement: string): { pub: string; sig: string } {
  const doc = readFileSync('docs/approvals.md', 'utf8');
  const section = doc.split('### Signing with standard tools')[1];
  assert.ok(section, 'docs/approvals.md tells an approver how to sign with standard tools');
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'the section holds a sh block');
  const dir = mkdtempSync(join(tmpdir(), 'gavel-approver-'));
  try {
    const out = execFileSync('bash', ['-euo', 'pipefail', '-c', `${block}\nprintf '%s\\n%s\\n' "$PUB" "$SIG"`], { cwd: dir, env: { ...process.env, STATEMENT: statement }, encoding: 'utf8' });
    const [pub, sig] = out.trim().split('\n');
    return { pub: pub!, sig: sig! };
  } finally { rmSync(dir, { recursive: true, force: true }); }
}

for (const backend of backends()) {
  test(`an approver following docs/approvals.md with openssl and coreutils gets a key and a signature the service accepts (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const P = svc.projectId;
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
      const key = await svc.keyHeader([]);
      const agent = v.opensslKey();
      const issued = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${P}/permits`, headers: issuer.post, payload: {
        agent: agent.did, actions: ['pay'], resources: ['resource://shop/*'], expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      } });
      assert.equal(issued.statusCode, 201, issued.body);
      const request = { agent: agent.did, permit: issued.json().permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 50_000, currency: 'EUR' }, intent: 'naïve café ✓' };
      const opened = await decide(svc, key, request) as unknown as { decision: string; approval_request_id: string };
      assert.equal(opened.decision, 'REQUIRE_APPROVAL');
      const list = await svc.app.inject({ method: 'GET', url: `/v1/projects/${P}/approvals?limit=500`, headers: key });
      const statement = list.json().approvals.find((o: { id: string }) => o.id === opened.approval_request_id).statement as string;

      const { pub, sig } = runDocumentedRecipe(statement);
      assert.match(pub, /^[A-Za-z0-9_-]{43}$/);
      assert.match(sig, /^[A-Za-z0-9_-]{86}$/);
      v.verifyEd25519(v.b64uDecode(pub), Buffer.from(statement, 'utf8'), v.b64uDecode(sig), 'the documented signature');

      const person = await consoleMember(svc, ['APPROVER']);
      const registered = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${P}/principals/${person.principalId}/approval-keys`, headers: person.post, payload: { public_key: pub } });
      assert.equal(registered.statusCode, 201, registered.body);
      // The JWK body the page gives is the same key in the same field: refused as already registered, not as malformed.
      const jwkBody = /or the same key as a JWK in its place,\s+`([^`]+)`/.exec(readFileSync('docs/approvals.md', 'utf8'))?.[1];
      assert.ok(jwkBody, 'docs/approvals.md gives the JWK form of the registration body');
      const asJwk = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${P}/principals/${person.principalId}/approval-keys`, headers: person.post, payload: jwkBody.replace('$PUB', pub) });
      assert.equal(asJwk.statusCode, 409, asJwk.body);
      assert.equal(asJwk.json().code, 'approval_key_exists');
      const record = (signature: string) => svc.app.inject({ method: 'POST', url: `/v1/projects/${P}/approvals`, headers: key, payload: { approval_request_id: opened.approval_request_id, key_id: registered.json().id, signature } });
      // What basenc writes unstripped is refused, and the answer says why.
      const padded = await record(`${sig}==`);
      assert.equal(padded.statusCode, 400);
      assert.match(padded.body, /without padding/);
      const recorded = await record(sig);
      assert.equal(recorded.statusCode, 201, recorded.body);
      const granted = await decide(svc, key, { ...request, approval_request_id: opened.approval_request_id });
      assert.deepEqual([granted.decision, granted.reason_code], ['ALLOW', 'approval_granted']);
    } finally {
      await svc.stop();
    }
  });
}
