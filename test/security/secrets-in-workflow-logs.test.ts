// No credential reaches the log or an error answer, at the most verbose level and on both engines:
// a service logging at trace (with the production redaction) runs a workflow and its failure paths:
// console sign-in, a wrong password, registrations whose password breaks the rule, an API key,
// permits in decisions, bodies that are malformed or invalid while they carry a permit, and
// executions whose merchant fails, resets, or does not answer, an approver's private key sent as
// its public key, and a database fault while a permit is recorded. Every secret is looked for in every
// log line and in every answer that is not the one meant to hand it out (the mint of a key, the
// issue of a permit, the sign-in's cookies), as text, base64 and the byte list of a Buffer.
// (A real `gavel serve`, Node's parser errors and the first start's password: secrets-in-logs.test.ts.)
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { InjectOptions } from 'fastify';
import { sql } from 'kysely';
import { REDACT } from '../../src/http/app.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { MERCHANT_SECRET, merchantsFile, startMerchant } from '../support/merchant.ts';
import { leaksIn } from '../support/secrets.ts';
import { startService } from '../support/service.ts';

/** The base64 body of every PEM private key under `<dataDir>/keys`, by file. */
function signingKeys(dataDir: string): Record<string, string> {
  const dir = join(dataDir, 'keys');
  return Object.fromEntries(readdirSync(dir).filter((f) => f.endsWith('.pem')).map((f) => [`signing key ${f}`,
    readFileSync(join(dir, f), 'utf8').replace(/-----[^-]+-----/g, '').replace(/\s+/g, '')]));
}

for (const backend of backends()) {
  describe(`secrets on ${backend.name}`, () => {
    test('no password, session, CSRF or device token, API key, permit, merchant secret, approver or signing private key appears in a log line at trace or an error answer', async () => {
      const lines: string[] = [];
      const stream = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
      const merchant = await startMerchant();
      const svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url, 400) }, undefined, { logger: { level: 'trace', stream, redact: REDACT } });
      const answers: string[] = [];
      const send = async (options: InjectOptions) => {
        const res = await svc.app.inject(options);
        answers.push(res.body);
        return res;
      };
      try {
        const key = await svc.keyHeader([]);
        const { key: adminKey } = await svc.member(['ADMIN']);
        await activatePolicy(svc, ALLOW_PAYMENTS);
        const agent = newAgent();
        const { jws: permit } = await issue(svc, agent.did, { actions: ['pay', 'read'], resources: ['resource://shop/*', 'resource://docs/*'] });
        const person = await consoleMember(svc, ['ADMIN', 'PERMIT_ISSUER']);
        const cookies = Object.fromEntries(person.get.cookie.split('; ').map((c) => c.split('=') as [string, string]));
        assert.ok(cookies.gavel_session && cookies.gavel_csrf && cookies.gavel_device, person.get.cookie);
        const json = { 'content-type': 'application/json' };

        // Decisions with executions: a merchant that succeeds, fails, resets and does not answer.
        const pay = (operation: string) => ({ agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' },
          execution: { merchant: 'shop', operation, payload: { order: 'o-1' }, nonce: `n-${randomBytes(6).toString('hex')}` } });
        for (const operation of ['ok', 'refuse', 'fail', 'reset', 'redirect', 'hang']) {
          assert.equal((await send({ method: 'POST', url: '/v1/authorize', headers: key, payload: pay(operation) })).statusCode, 200, operation);
        }
        // Bodies that carry a permit and are refused: malformed JSON, the permit where a DID belongs, a permit of another type.
        assert.equal((await send({ method: 'POST', url: '/v1/authorize', headers: { ...key, ...json }, payload: `{"agent":"${agent.did}","permit":"${permit}",` })).statusCode, 400);
        assert.equal((await send({ method: 'POST', url: '/v1/authorize', headers: { ...key, ...json }, payload: `{"permit":"${permit}"}}` })).statusCode, 400);
        assert.equal((await send({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: permit, permit, action: 'read', resource: 'resource://docs/a' } })).statusCode, 400);
        assert.equal((await send({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit: [permit], action: 'read', resource: 'resource://docs/a', url: permit } })).statusCode, 400);
        // A permit presented by another agent, or changed by a character: a decision refused, not an error.
        assert.equal((await send({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: newAgent().did, permit, action: 'read', resource: 'resource://docs/a' } })).statusCode, 200);
        assert.equal((await send({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit: `${permit.slice(0, -2)}AA`, action: 'read', resource: 'resource://docs/a' } })).statusCode, 200);
        // The same permit sent to revocation as a chain of a link the service does not hold.
        await send({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/permits/${'0'.repeat(64)}/revoke`, headers: person.post, payload: { permit } });

        // Passwords: a wrong one, one too weak, one too long, one of the wrong type beside the name.
        const wrongPassword = `wrong-${randomBytes(12).toString('base64url')}`;
        const weakPassword = 'qzqzqzqzqzqzqzqzqzqzqzqz';
        const longPassword = randomBytes(300).toString('base64url');
        const named = `${person.name}-${randomBytes(6).toString('hex')}`;
        assert.equal((await send({ method: 'POST', url: '/v1/console/login', payload: { name: person.name, password: wrongPassword } })).statusCode, 401);
        assert.equal((await send({ method: 'POST', url: '/v1/console/register', payload: { name: `n-${randomBytes(4).toString('hex')}`, password: weakPassword } })).statusCode, 400);
        assert.equal((await send({ method: 'POST', url: '/v1/console/register', payload: { name: `n-${randomBytes(4).toString('hex')}`, password: longPassword } })).statusCode, 400);
        assert.equal((await send({ method: 'POST', url: '/v1/console/register', payload: { name: named, password: `${named}-1234` } })).statusCode, 400);
        assert.equal((await send({ method: 'POST', url: '/v1/console/login', headers: json, payload: `{"name":"${person.name}","password":"${wrongPassword}` })).statusCode, 400);
        assert.equal((await send({ method: 'POST', url: '/v1/console/login', payload: { name: person.name, password: wrongPassword, again: wrongPassword } })).statusCode, 400);

        // A key minted and revoked in the console, used before and after; the session on a route it may not use.
        const minted = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/api-keys`, headers: person.post, payload: { name: 'k', roles: ['ADMIN'] } });
        assert.equal(minted.statusCode, 201, minted.body);
        const { id: keyId, secret: mintedSecret } = minted.json() as { id: string; secret: string };
        assert.equal((await send({ method: 'GET', url: `/v1/projects/${svc.projectId}/sod`, headers: { authorization: `Bearer ${mintedSecret}` } })).statusCode, 200);
        assert.equal((await send({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/api-keys/${keyId}/revoke`, headers: person.post, payload: {} })).statusCode, 200);
        assert.equal((await send({ method: 'GET', url: `/v1/projects/${svc.projectId}/sod`, headers: { authorization: `Bearer ${mintedSecret}` } })).statusCode, 401);
        assert.equal((await send({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/api-keys`, headers: { cookie: person.get.cookie, ...json }, payload: { name: 'no-csrf', roles: ['ADMIN'] } })).statusCode, 403);
        assert.equal((await send({ method: 'GET', url: `/v1/projects/${svc.projectId}/sod?token=x`, headers: { authorization: `Bearer ${adminKey}`, cookie: person.get.cookie, 'x-csrf-token': person.post['x-csrf-token'] } })).statusCode, 400);
        assert.equal((await send({ method: 'DELETE', url: '/v1/authorize', headers: { ...key, cookie: person.get.cookie } })).statusCode, 405);

        // An approver's private key sent by mistake, as a JWK and as PEM: refused, never echoed.
        const approver = generateKeyPairSync('ed25519');
        const privateJwk = approver.privateKey.export({ format: 'jwk' });
        const privatePem = String(approver.privateKey.export({ format: 'pem', type: 'pkcs8' }));
        const keys = `/v1/console/projects/${svc.projectId}/principals/${person.principalId}/approval-keys`;
        assert.equal((await send({ method: 'POST', url: keys, headers: person.post, payload: { public_key: privateJwk } })).statusCode, 400);
        assert.equal((await send({ method: 'POST', url: keys, headers: person.post, payload: { public_key: privatePem } })).statusCode, 400);
        assert.equal((await send({ method: 'POST', url: keys, headers: person.post, payload: { public_key: privateJwk.d } })).statusCode < 500, true);

        // A fault of the database while a permit is recorded: a logged 500. PostgreSQL's error for a
        // failed check carries the whole row (detail: "Failing row contains (…)"), the signed permit in it.
        const db = svc.ts.store.db;
        if (backend.name === 'postgres') await sql`alter table permits add constraint no_more_permits check (commitment = '') not valid`.execute(db);
        else await sql`create trigger no_more_permits before insert on permits begin select raise(abort, 'no_more_permits'); end`.execute(db);
        const refused = await send({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/permits`, headers: person.post,
          payload: { agent: agent.did, actions: ['read'], resources: ['resource://docs/*'], expires_at: new Date(Date.now() + 3_600_000).toISOString() } });
        assert.equal(refused.statusCode, 500, refused.body);
        assert.ok(lines.some((l) => l.includes('"msg":"request failed"') && l.includes('no_more_permits')), 'the fault was logged');

        assert.ok(merchant.totalCalls() >= 6, 'the merchant was called');
        assert.equal(svc.app.log.level, 'trace');
        assert.ok(lines.some((l) => l.includes('"url":"/v1/console/login"')), 'the requests were logged');
        const secrets: Record<string, string> = {
          'API key': key.authorization.slice('Bearer '.length), 'admin API key': adminKey, 'minted API key': mintedSecret,
          'session token': cookies.gavel_session, 'CSRF token': cookies.gavel_csrf, 'device cookie': cookies.gavel_device,
          'password': person.password, 'wrong password': wrongPassword, 'weak password': weakPassword, 'long password': longPassword,
          'permit': permit, 'merchant secret': MERCHANT_SECRET, 'approval private key': privateJwk.d!, 'approval private key (PEM)': privatePem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), ...signingKeys(svc.ts.dataDir),
        };
        assert.deepEqual(leaksIn(secrets, lines), [], 'in the log');
        assert.deepEqual(leaksIn(secrets, answers), [], 'in an answer');
      } finally {
        await svc.stop().finally(() => merchant.close());
      }
    });
  });
}
