// Console routes for permits and agents: issue through the console, then authorize with it;
// paging; revocation seen by the next decision; bad input.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { activatePolicy, ALLOW_PAYMENTS, delegate, issue, newAgent } from '../support/authorize.ts';
import { didKeyFromPublicKey, permitCommitment, signPermitClaims, type PermitClaims } from '../../src/domain/permit/index.ts';

for (const backend of backends()) {
  describe(`console permits and agents on ${backend.name}`, () => {
    let svc: TestService;
    let issuer: ConsoleMember;
    let auditor: ConsoleMember;
    const base = () => `/v1/console/projects/${svc.projectId}`;
    before(async () => {
      svc = await startService(backend);
      issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
      auditor = await consoleMember(svc, ['AUDITOR']);
      await activatePolicy(svc, ALLOW_PAYMENTS);
    });
    after(async () => { await svc.stop(); });

    test('a permit issued in the console authorizes its agent, and its revocation denies the next decision', async () => {
      const agent = newAgent();
      const res = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent: agent.did, actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 1000, currency: 'EUR' }, expires_at: new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_999).toISOString(),
      } });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.headers['cache-control'], 'no-store', 'the permit is a bearer credential');
      const permit = res.json();
      assert.match(permit.commitment, /^[0-9a-f]{64}$/);
      assert.equal(permit.status, 'active');
      // The view's expiry is the signed one: whole seconds, fractions dropped at issuance.
      const exp = JSON.parse(Buffer.from(permit.permit.split('.')[1], 'base64url').toString('utf8')).exp;
      assert.equal(permit.expires_at, new Date(exp * 1000).toISOString());
      assert.match(permit.expires_at, /\.000Z$/);
      const key = await svc.keyHeader([]);
      const body = { agent: agent.did, permit: permit.permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } };
      assert.equal((await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body })).json().decision, 'ALLOW');
      const one = await svc.app.inject({ method: 'GET', url: `${base()}/permits/${permit.commitment}`, headers: auditor.get });
      assert.equal(one.json().agent, agent.did);
      assert.ok(!('permit' in one.json()), 'the permit itself is shown once, at issuance');
      const revoked = await svc.app.inject({ method: 'POST', url: `${base()}/permits/${permit.commitment}/revoke`, headers: issuer.post, payload: {} });
      assert.equal(revoked.json().status, 'revoked');
      const again = await svc.app.inject({ method: 'POST', url: `${base()}/permits/${permit.commitment}/revoke`, headers: issuer.post, payload: {} });
      assert.equal(again.statusCode, 409);
      const denied = (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: body })).json();
      assert.equal(denied.reason_code, 'permit_invalid');
      const unknown = await svc.app.inject({ method: 'POST', url: `${base()}/permits/${'0'.repeat(64)}/revoke`, headers: issuer.post, payload: {} });
      assert.equal(unknown.statusCode, 404);
    });

    test('bad permit requests are refused with located errors', async () => {
      const agent = newAgent().did;
      const cases: [Record<string, unknown>, string][] = [
        [{ agent, actions: [], resources: ['resource://a/*'], expires_at: new Date(Date.now() + 60_000).toISOString() }, '/actions'],
        [{ agent, actions: ['a'], resources: ['https://x'], expires_at: new Date(Date.now() + 60_000).toISOString() }, '/resources/0'],
        [{ agent, actions: ['read', 'pay now'], resources: ['resource://a/*'], expires_at: new Date(Date.now() + 60_000).toISOString() }, '/actions/1'],
        [{ agent, actions: ['äöü'], resources: ['resource://a/*'], expires_at: new Date(Date.now() + 60_000).toISOString() }, '/actions/0'],
        [{ agent: 'did:x:y:', actions: ['a'], resources: ['resource://a/*'], expires_at: new Date(Date.now() + 60_000).toISOString() }, '/agent'],
        [{ agent, actions: ['a'], resources: ['resource://a/*'], expires_at: new Date(Date.now() - 60_000).toISOString() }, '/expires_at'],
        [{ agent, actions: ['a'], resources: ['resource://a/*'], expires_at: 'tomorrow' }, '/expires_at'],
        [{ agent, actions: ['a'], resources: ['resource://a/*'], budget: { minor: 1.5, currency: 'EUR' }, expires_at: new Date(Date.now() + 60_000).toISOString() }, '/budget/minor'],
        [{ agent, actions: ['a'], resources: ['resource://a/*'], max_per_request: { minor: 1, currency: 'EUR' }, budget: { minor: 5, currency: 'USD' }, expires_at: new Date(Date.now() + 60_000).toISOString() }, '/max_per_request'],
        [{ agent, actions: ['a'], resources: ['resource://a/*'], not_before: new Date(Date.now() + 60_000).toISOString(), expires_at: new Date(Date.now() + 60_000).toISOString() }, '/not_before'],
      ];
      for (const [payload, pointer] of cases) {
        const res = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload });
        assert.equal(res.statusCode, 400, res.body);
        assert.ok(res.json().errors.some((e: { pointer: string }) => e.pointer === pointer), `${pointer} in ${res.body}`);
      }
      // A time the permit's claims cannot hold (before 1970) is refused at its member, not a server error.
      const early = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post,
        payload: { agent, actions: ['a'], resources: ['resource://a/*'], not_before: '1969-12-31T00:00:00Z', expires_at: new Date(Date.now() + 60_000).toISOString() } });
      assert.deepEqual([early.statusCode, early.json().errors?.[0]?.pointer], [400, '/not_before'], early.body);
    });

    test('a permit time past 9999-12-31T23:59:59Z is refused: its ISO string (a signed six-digit year) would read as long expired', async () => {
      // An offset west of UTC puts the last day of year 9999 into year 10000; accepted, the permit was
      // listed as expired at once with expires_at "+010000-…", while decisions took it as valid.
      const res = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent: newAgent().did, actions: ['read'], resources: ['resource://r/*'], not_before: '9999-12-31T23:59:59-00:01', expires_at: '9999-12-31T23:59:59.999-01:00',
      } });
      assert.equal(res.statusCode, 400, res.body);
      assert.deepEqual(res.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`).sort(), ['/expires_at out_of_range', '/not_before out_of_range']);
      const last = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent: newAgent().did, actions: ['read'], resources: ['resource://r/*'], expires_at: '9999-12-31T23:59:59.999Z',
      } });
      assert.equal(last.statusCode, 201, last.body);
      assert.deepEqual([last.json().expires_at, last.json().status], ['9999-12-31T23:59:59.000Z', 'active']);
      // The first whole second past it (an offset of a minute west puts 23:59 at midnight of year 10000).
      const first = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent: newAgent().did, actions: ['read'], resources: ['resource://r/*'], not_before: '9999-12-31T23:59:00-00:01', expires_at: '9999-12-31T23:59:59-00:02',
      } });
      assert.equal(first.statusCode, 400, first.body);
      assert.deepEqual(first.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`).sort(), ['/expires_at out_of_range', '/not_before out_of_range']);
    });

    test('every spelling of one instant issues the same permit times; the spellings Gavel refuses are 400s at their member', async () => {
      const issue = (times: { not_before?: string; expires_at: string }) => svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post,
        payload: { agent: newAgent().did, actions: ['read'], resources: ['resource://r/*'], ...times } });
      const claimsOf = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[1]!, 'base64url').toString('utf8'));
      // 2030-01-01T00:00:00Z as an expiry, 2029-01-01T00:00:00Z as a start, in every form accepted.
      for (const [nbf, exp] of [
        ['2029-01-01T00:00:00Z', '2030-01-01T00:00:00Z'], ['2029-01-01T01:00:00+01:00', '2030-01-01T01:00:00+01:00'],
        ['2028-12-31T18:30:00-05:30', '2029-12-31T18:30:00-05:30'], ['2029-01-01T00:00:00-00:00', '2030-01-01T00:00:00+00:00'],
        // A start's fraction rounds up, an expiry's down: the permit is never valid at an instant excluded.
        ['2028-12-31T23:59:59.1Z', '2030-01-01T00:00:00.5Z'], ['2029-01-01T05:29:59.000000001+05:30', '2030-01-01T00:00:00.999999999Z'],
      ]) {
        const res = await issue({ not_before: nbf!, expires_at: exp! });
        assert.equal(res.statusCode, 201, `${nbf} ${exp}: ${res.body}`);
        assert.equal(res.json().expires_at, '2030-01-01T00:00:00.000Z', exp);
        assert.deepEqual([claimsOf(res.json().permit).nbf, claimsOf(res.json().permit).exp], [Date.UTC(2029, 0, 1) / 1000, Date.UTC(2030, 0, 1) / 1000], `${nbf} ${exp}`);
        const row = await svc.ts.store.db.selectFrom('permits').select('expires_at').where('commitment', '=', res.json().commitment).executeTakeFirstOrThrow();
        assert.equal(row.expires_at, '2030-01-01T00:00:00.000Z', `${exp} is stored in the one form that sorts as time`);
      }
      // A start a millisecond into a second is signed as the next second, never the one it began in;
      // one that rounds up onto its expiry leaves the permit no instant, which is refused as such.
      const late = await issue({ not_before: '2029-01-01T00:00:00.001Z', expires_at: '2030-01-01T00:00:00Z' });
      assert.equal(late.statusCode, 201, late.body);
      assert.equal(claimsOf(late.json().permit).nbf, Date.UTC(2029, 0, 1, 0, 0, 1) / 1000);
      const none = await issue({ not_before: '2029-12-31T23:59:59.5Z', expires_at: '2030-01-01T00:00:00.7Z' });
      assert.equal(none.statusCode, 400, none.body);
      assert.deepEqual(none.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`), ['/not_before after_expiry']);
      // Forms RFC 3339 allows that Gavel does not take (a leap second, which Unix time cannot hold;
      // lower-case "t"/"z", as in the policy language), and forms it does not allow at all.
      for (const bad of ['2029-12-31T23:59:60Z', '2030-01-01T00:59:60+01:00', '2030-01-01t00:00:00z', '2030-01-01T00:00:00z',
        '2030-01-01T01:00:00+01', '2030-01-01T01:00:00+0100', '2030-01-01 00:00:00Z', '2030-01-01T00:00:00']) {
        const res = await issue({ not_before: bad.replace('2030', '2029').replace('2029-12-31', '2028-12-31'), expires_at: bad });
        assert.equal(res.statusCode, 400, `${bad}: ${res.body}`);
        assert.deepEqual(res.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`).sort(), ['/expires_at bad_format', '/not_before bad_format'], bad);
      }
      // A start before 1970, which a permit's claims cannot hold, is refused at its member too.
      const early = await issue({ not_before: '1969-12-31T23:59:59Z', expires_at: '2030-01-01T00:00:00Z' });
      assert.equal(early.statusCode, 400, early.body);
      assert.deepEqual(early.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`), ['/not_before out_of_range']);
      assert.equal((await issue({ not_before: '1970-01-01T01:00:00+01:00', expires_at: '2030-01-01T00:00:00Z' })).statusCode, 201, 'the epoch itself, in an offset');
    });

    test('every claim error of a permit request comes at once, located; a 513-character pattern is allowed', async () => {
      const agent = newAgent().did;
      const soon = new Date(Date.now() + 60_000).toISOString();
      const res = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent: 'did:key:zNOTAKEY', actions: ['read', 'pay.*'], resources: ['resource://r/*/x'], expires_at: new Date(Date.now() - 60_000).toISOString(),
      } });
      assert.equal(res.statusCode, 400, res.body);
      const errors = res.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`).sort();
      assert.deepEqual(errors, ['/actions/1 invalid_action', '/agent invalid_did_key', '/expires_at in_the_past', '/resources/0 invalid_pattern']);
      const pattern = `resource://${'a'.repeat(512 - 'resource://'.length)}*`;
      assert.equal(pattern.length, 513);
      const long = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: { agent, actions: ['read'], resources: [pattern], expires_at: soon } });
      assert.equal(long.statusCode, 201, long.body);
      // No permit is issued to a key of small order (here the identity): no secret stands behind it.
      const weakAgent = didKeyFromPublicKey(new Uint8Array(Buffer.from('01'.padEnd(64, '0'), 'hex')));
      const weak = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: { agent: weakAgent, actions: ['read'], resources: ['resource://r/*'], expires_at: soon } });
      assert.equal(weak.statusCode, 400, weak.body);
      assert.deepEqual(weak.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`), ['/agent invalid_did_key']);
      assert.equal(long.headers['cache-control'], 'no-store', 'the permit is a bearer credential');
      // Errors the schema finds and errors of the claims come in one answer too, each message
      // saying what form is wanted.
      const mixed = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent, actions: ['a b'], resources: ['resource://r/*/x'], max_uses: 0, not_before: '2030-01-01', expires_at: new Date(Date.now() - 60_000).toISOString(),
      } });
      assert.equal(mixed.statusCode, 400, mixed.body);
      assert.deepEqual(mixed.json().errors.map((e: { pointer: string; code: string; message: string }) => `${e.pointer} ${e.code}: ${e.message}`).sort(), [
        '/actions/0 bad_format: does not have the required form: 1 to 64 printable ASCII characters, no spaces; "*" alone for any action',
        '/expires_at in_the_past: expires_at must be in the future',
        '/max_uses too_small: must be >= 1',
        '/not_before bad_format: does not have the required form: RFC 3339 date-time with a time zone, e.g. 2030-01-01T00:00:00Z or 2030-01-01T01:00:00+01:00 (T and Z uppercase, no leap second; a fraction rounds up to the next whole second); before it the permit does not verify yet',
        '/resources/0 invalid_pattern: a resource pattern is a resource URI (non-empty segments, no dot segments, escapes only for what it cannot hold as is, in uppercase hex: no encoded letter, digit, "/", "\\", ".", "%", "#", "?" or control character; a first segment in lowercase without "@", ":" or a trailing dot; no ";"), optionally ending in one "*" (docs/policy-language.md)',
      ]);
      // Items the schema refuses do not hide the claim errors of their siblings; patterns no request
      // could match (an empty or dot segment, an encoded slash) are not signed.
      const siblings = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent, actions: ['a b', '*x', ''], resources: ['http://x', 'resource://a/*/b', 'resource://a//b', 'resource://a/../b/*', 'resource://a/%2Fb*', 'resource://a/%2e%2e'], expires_at: soon,
      } });
      assert.equal(siblings.statusCode, 400, siblings.body);
      assert.deepEqual(siblings.json().errors.map((e: { pointer: string }) => e.pointer).sort(),
        ['/actions/0', '/actions/1', '/actions/2', '/resources/0', '/resources/1', '/resources/2', '/resources/3', '/resources/4', '/resources/5'], siblings.body);
      // A 513-character pattern is a 512-character resource and its "*"; without the "*" it names nothing a request may.
      // Nor a pattern in another spelling than the normal form a request must use (%41 is "A"): it could match nothing.
      for (const never of [`resource://${'a'.repeat(502)}`, 'resource://a/..;x/*', 'resource://a/%C0%AF*', 'resource://shop/%41*', 'resource://docs/%c3%a4/*']) {
        const res = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: { agent, actions: ['read'], resources: [never], expires_at: soon } });
        assert.equal(res.statusCode, 400, `${never.slice(0, 40)}: ${res.body}`);
      }
      // The one refused for its length says so, rather than that its form is wrong.
      const exact = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: { agent, actions: ['read'], resources: ['resource://a', `resource://${'a'.repeat(502)}`], expires_at: soon } });
      assert.deepEqual(exact.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`), ['/resources/1 invalid_pattern'], exact.body);
      assert.match(exact.json().errors[0].message, /513 characters.*at most 512/, exact.body);
      for (const fine of ['resource://*', 'resource://a/.well-known/*', 'resource://a/..x', 'resource://shop/%2A*', 'resource://docs/%C3%A4/*']) {
        const res = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: { agent, actions: ['read'], resources: [fine], expires_at: soon } });
        assert.equal(res.statusCode, 201, `${fine}: ${res.body}`);
      }
      const list = await svc.app.inject({ method: 'GET', url: `${base()}/permits?agent=notadid`, headers: issuer.get });
      assert.equal(list.statusCode, 400, list.body);
      assert.equal(list.json().errors[0].pointer, '/agent');
    });

    test('a permit longer than any decision accepts is refused at issuance (422), not issued to be DENY too_large on every use', async () => {
      const agent = newAgent().did;
      // 40 patterns of about 500 characters: a body well inside the limit, a JWS of some 27,000 characters.
      const resources = Array.from({ length: 40 }, (_, i) => `resource://shop/${String(i).padStart(2, '0')}${'a'.repeat(480)}/*`);
      const res = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: { agent, actions: ['pay'], resources, expires_at: new Date(Date.now() + 60_000).toISOString() } });
      assert.deepEqual([res.statusCode, res.json().code], [422, 'invalid_permit_claims'], res.body);
      assert.match(res.json().detail, /at most 16384/);
      const listed = await svc.app.inject({ method: 'GET', url: `${base()}/permits?agent=${encodeURIComponent(agent)}`, headers: auditor.get });
      assert.deepEqual(listed.json().permits, [], 'nothing was recorded');
    });

    test('a permit view says when it is not yet valid and what allowed decisions spent through it', async () => {
      const agent = newAgent();
      const later = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent: agent.did, actions: ['pay'], resources: ['resource://shop/*'], not_before: new Date(Date.now() + 600_000).toISOString(), expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      } });
      assert.equal(later.statusCode, 201, later.body);
      assert.equal(later.json().status, 'not_yet_valid');
      const res = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent: agent.did, actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 1000, currency: 'EUR' }, max_uses: 5, expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      } });
      const permit = res.json();
      // The claims fix the currency from issuance on, in the single view and the list alike.
      assert.deepEqual(permit.usage, { uses: 0, spent_minor: 0, currency: 'EUR' });
      const unspent = await svc.app.inject({ method: 'GET', url: `${base()}/permits/${permit.commitment}`, headers: auditor.get });
      assert.deepEqual(unspent.json().usage, { uses: 0, spent_minor: 0, currency: 'EUR' });
      const listed = (await svc.app.inject({ method: 'GET', url: `${base()}/permits?agent=${encodeURIComponent(agent.did)}`, headers: auditor.get })).json();
      assert.deepEqual(Object.fromEntries(listed.permits.map((p: { commitment: string; usage: unknown }) => [p.commitment, p.usage])),
        { [permit.commitment]: { uses: 0, spent_minor: 0, currency: 'EUR' }, [later.json().commitment]: { uses: 0, spent_minor: 0, currency: null } }, 'a permit with no money limit has no currency');
      // A per-request limit alone fixes it too, though no budget counter spends in it.
      const perRequest = await svc.app.inject({ method: 'POST', url: `${base()}/permits`, headers: issuer.post, payload: {
        agent: agent.did, actions: ['pay'], resources: ['resource://shop/*'], max_per_request: { minor: 1000, currency: 'EUR' }, max_uses: 5, expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      } });
      assert.deepEqual(perRequest.json().usage, { uses: 0, spent_minor: 0, currency: 'EUR' });
      const key = await svc.keyHeader([]);
      const payCapped = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit: perRequest.json().permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } } });
      assert.equal(payCapped.json().decision, 'ALLOW', payCapped.body);
      const counted = await svc.app.inject({ method: 'GET', url: `${base()}/permits/${perRequest.json().commitment}`, headers: auditor.get });
      assert.deepEqual(counted.json().usage, { uses: 1, spent_minor: 0, currency: 'EUR' });
      const pay = (minor: number) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit: permit.permit, action: 'pay', resource: 'resource://shop/1', amount: { minor, currency: 'EUR' } } });
      assert.equal((await pay(300)).json().decision, 'ALLOW');
      assert.equal((await pay(200)).json().decision, 'ALLOW');
      assert.equal((await pay(900)).json().decision, 'DENY', 'over the budget left: spends nothing');
      const seen = (await svc.app.inject({ method: 'GET', url: `${base()}/permits/${permit.commitment}`, headers: auditor.get })).json();
      assert.deepEqual(seen.usage, { uses: 2, spent_minor: 500, currency: 'EUR' });
      assert.equal(seen.status, 'active');
    });

    test('an empty or oversized permit is a recorded DENY permit_invalid, not a refused request', async () => {
      const agent = newAgent();
      const key = await svc.keyHeader([]);
      for (const [permit, check] of [['', 'malformed'], ['x'.repeat(16_385), 'too_large']] as const) {
        const res = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1' } });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().decision, 'DENY');
        assert.equal(res.json().reason_code, 'permit_invalid');
        assert.match(res.json().detail, new RegExp(`^${check}`));
        assert.match(res.json().audit_id, /^aud_/);
      }
    });

    test('a NUL anywhere in a request is a located 400 on both engines, never a 500 from PostgreSQL', async () => {
      const key = await svc.keyHeader([]);
      const frozen = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent: newAgent().did, reason: 'a\u0000b' } });
      assert.equal(frozen.statusCode, 400, frozen.body);
      assert.deepEqual(frozen.json().errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]), [['/reason', 'invalid_unicode']]);
      const listed = await svc.app.inject({ method: 'GET', url: `${base()}/permits?agent=did%3Aex%3A%00`, headers: auditor.get });
      assert.equal(listed.statusCode, 400, listed.body);
    });

    test('a reason that is sent must say something: blank or invisible text is a located 400 on freeze, release and an approval\'s withdrawal', async () => {
      const key = await svc.keyHeader([]);
      const releaser = await svc.keyHeader(['PERMIT_ISSUER']);
      const admin = await consoleMember(svc, ['ADMIN']);
      const agent = newAgent().did;
      const calls = [
        ['POST', `/v1/projects/${svc.projectId}/agents/freeze`, key, { agent }],
        ['POST', `/v1/projects/${svc.projectId}/agents/release`, releaser, { agent }],
        ['POST', `${base()}/agents/freeze`, admin.post, { agent }],
        ['POST', `${base()}/agents/release`, admin.post, { agent }],
        ['POST', `/v1/projects/${svc.projectId}/approvals/revoke`, key, { approval_request_id: 'apr_01kb0000000000000000000000' }],
      ] as const;
      for (const [method, url, headers, body] of calls) {
        for (const reason of ['   ', '\t\n', '\u200b', '\u3164\u2800']) {
          const res = await svc.app.inject({ method, url, headers, payload: { ...body, reason } });
          assert.equal(res.statusCode, 400, `${url} ${JSON.stringify(reason)}: ${res.body}`);
          assert.deepEqual(res.json().errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]), [['/reason', 'bad_format']], url);
          assert.match(res.json().errors[0].message, /at least one visible character/);
        }
      }
      // Nothing was frozen by the refusals; a reason in words is taken as before.
      const state = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/agents/state?agent=${encodeURIComponent(agent)}`, headers: key });
      assert.equal(state.json().frozen ?? false, false, state.body);
      const frozen = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent, reason: ' — suspected leak ' } });
      assert.equal(frozen.statusCode, 200, frozen.body);
      assert.equal(frozen.json().reason, ' — suspected leak ');
    });

    test('an agent first seen through a permit can be registered and named later, once', async () => {
      const admin = await consoleMember(svc, ['ADMIN']);
      const agent = newAgent().did;
      await issue(svc, agent, { actions: ['read'], resources: ['resource://docs/*'] });
      const seen = (await svc.app.inject({ method: 'GET', url: `${base()}/agents/${encodeURIComponent(agent)}`, headers: auditor.get })).json();
      assert.equal(seen.registered_at, null);
      const reg = await svc.app.inject({ method: 'POST', url: `${base()}/agents`, headers: admin.post, payload: { did: agent, name: 'reader' } });
      assert.equal(reg.statusCode, 201, reg.body);
      assert.equal(reg.json().name, 'reader');
      assert.equal(reg.json().registered_by, admin.principalId);
      assert.equal(reg.json().created_at, seen.created_at, 'the row it had keeps its history');
      const again = await svc.app.inject({ method: 'POST', url: `${base()}/agents`, headers: admin.post, payload: { did: agent, name: 'other' } });
      assert.equal(again.statusCode, 409);
      assert.equal(again.json().code, 'agent_exists');
      const bad = await svc.app.inject({ method: 'POST', url: `${base()}/agents`, headers: admin.post, payload: { did: 'did:key:zNOTAKEY' } });
      assert.equal(bad.statusCode, 400, bad.body);
      assert.equal(bad.json().errors[0].code, 'invalid_did_key');
      // The identity point: a well-formed did:key that no secret stands behind.
      const identity = didKeyFromPublicKey(new Uint8Array(Buffer.from('01'.padEnd(64, '0'), 'hex')));
      const weak = await svc.app.inject({ method: 'POST', url: `${base()}/agents`, headers: admin.post, payload: { did: identity } });
      assert.equal(weak.statusCode, 400, weak.body);
      assert.equal(weak.json().errors[0].code, 'invalid_did_key');
    });

    /** A root permit for `holder`, delegated to `child`, then narrowed to `grandchild`'s. */
    async function threeLinks() {
      const [holder, child, grandchild] = [newAgent(), newAgent(), newAgent()];
      const root = await issue(svc, holder.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const toChild = await delegate(root.jws, holder, child.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const toGrandchild = await delegate(toChild, child, grandchild.did, { actions: ['read'], resources: ['resource://docs/public/*'] });
      return { holder, child, grandchild, root, toChild, toGrandchild };
    }

    test('a delegated link, once a decision has seen it, is listed and revocable by its own commitment, which spares its ancestors', async () => {
      const { holder, child, grandchild, root, toChild, toGrandchild } = await threeLinks();
      const [childLink, grandchildLink] = [toChild, toGrandchild].map((c) => permitCommitment(c.split('~').at(-1)!)) as [string, string];
      const key = await svc.keyHeader([]);
      const decide = async (agent: string, permit: string) => (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key,
        payload: { agent, permit, action: 'read', resource: 'resource://docs/public/a' } })).json() as { decision: string; detail?: string };
      assert.equal((await decide(grandchild.did, toGrandchild)).decision, 'ALLOW');
      const seen = await svc.app.inject({ method: 'GET', url: `${base()}/permits/${childLink}`, headers: auditor.get });
      assert.equal(seen.statusCode, 200, seen.body);
      assert.deepEqual({ ...(seen.json() as object), created_at: null, claims: null },
        { commitment: childLink, agent: child.did, parent: root.commitment, issued_by: holder.did, claims: null, created_at: null,
          expires_at: seen.json().expires_at, revoked_at: null, revoked_by: null, revoked_via: null, status: 'active',
          usage: { uses: 0, spent_minor: 0, currency: null } }, 'no limit on the chain: nothing counted');
      assert.equal(seen.json().claims.sub, child.did);
      const listed = (await svc.app.inject({ method: 'GET', url: `${base()}/permits?agent=${encodeURIComponent(grandchild.did)}`, headers: auditor.get })).json();
      assert.deepEqual(listed.permits.map((p: { commitment: string; parent: string }) => [p.commitment, p.parent]), [[grandchildLink, childLink]]);
      // Revoking the middle link denies it and what hangs below it, on the next decision; the root stands.
      const revoked = await svc.app.inject({ method: 'POST', url: `${base()}/permits/${childLink}/revoke`, headers: issuer.post, payload: {} });
      assert.equal(revoked.statusCode, 200, revoked.body);
      assert.equal(revoked.json().status, 'revoked');
      assert.match((await decide(grandchild.did, toGrandchild)).detail ?? '', /^revoked:/);
      assert.match((await decide(child.did, toChild)).detail ?? '', /^revoked:/);
      assert.equal((await decide(holder.did, root.jws)).decision, 'ALLOW');
      // The views agree with the decisions: the grandchild reads revoked through the child, the root active.
      const get = async (c: string) => (await svc.app.inject({ method: 'GET', url: `${base()}/permits/${c}`, headers: auditor.get })).json();
      const child1 = await get(childLink);
      assert.deepEqual(pick(await get(grandchildLink)), { status: 'revoked', revoked_at: child1.revoked_at, revoked_by: child1.revoked_by, revoked_via: childLink });
      assert.deepEqual(pick(child1), { status: 'revoked', revoked_at: child1.revoked_at, revoked_by: child1.revoked_by, revoked_via: null });
      assert.ok(child1.revoked_at && child1.revoked_by?.includes(issuer.principalId), JSON.stringify(child1));
      assert.deepEqual(pick(await get(root.commitment)), { status: 'active', revoked_at: null, revoked_by: null, revoked_via: null });
      const page = (await svc.app.inject({ method: 'GET', url: `${base()}/permits?agent=${encodeURIComponent(grandchild.did)}`, headers: auditor.get })).json();
      assert.deepEqual(page.permits.map(pick), [pick(await get(grandchildLink))]);
      // Revoking the root afterwards: the earliest revocation above a link is the one it shows.
      assert.equal((await svc.app.inject({ method: 'POST', url: `${base()}/permits/${root.commitment}/revoke`, headers: issuer.post, payload: {} })).statusCode, 200);
      assert.equal((await get(grandchildLink)).revoked_via, childLink);
    });

    test('a link reads revoked through an ancestor two links up, and through the earliest revocation above it, however far', async () => {
      const { grandchild, root, toChild, toGrandchild } = await threeLinks();
      const [childLink, grandchildLink] = [toChild, toGrandchild].map((c) => permitCommitment(c.split('~').at(-1)!)) as [string, string];
      const key = await svc.keyHeader([]);
      const seen = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: grandchild.did, permit: toGrandchild, action: 'read', resource: 'resource://docs/public/a' } });
      assert.equal(seen.json().decision, 'ALLOW', seen.body);
      const get = async (c: string) => (await svc.app.inject({ method: 'GET', url: `${base()}/permits/${c}`, headers: auditor.get })).json();
      const revoke = (c: string) => svc.app.inject({ method: 'POST', url: `${base()}/permits/${c}/revoke`, headers: issuer.post, payload: {} });
      assert.equal((await revoke(root.commitment)).statusCode, 200);
      const rootView = await get(root.commitment);
      assert.deepEqual(pick(await get(grandchildLink)), { status: 'revoked', revoked_at: rootView.revoked_at, revoked_by: rootView.revoked_by, revoked_via: root.commitment });
      // The child revoked later (a later instant): the root's revocation, the earlier, is still the one shown.
      await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal((await revoke(childLink)).statusCode, 200);
      assert.ok((await get(childLink)).revoked_at > rootView.revoked_at);
      assert.equal((await get(grandchildLink)).revoked_via, root.commitment);
    });

    test('a delegated link whose recording failed is recorded by the next decision, not skipped because its chain verified before', async () => {
      const { child, grandchild, toGrandchild } = await threeLinks();
      const childLink = permitCommitment(toGrandchild.split('~')[1]!);
      const key = await svc.keyHeader([]);
      const decide = () => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key,
        payload: { agent: grandchild.did, permit: toGrandchild, action: 'read', resource: 'resource://docs/public/a' } });
      // The database refuses to record delegated links for a moment (an outage, as the first
      // decision to present the chain sees it), then takes them again.
      const db = svc.ts.store.db;
      const [refuse, accept] = backend.name === 'postgres'
        ? [[`create function refuse_links() returns trigger language plpgsql as $$ begin if new.parent is not null then raise exception 'refused'; end if; return new; end $$`,
          'create trigger refuse_links before insert on permits for each row execute function refuse_links()'],
        ['drop trigger refuse_links on permits', 'drop function refuse_links()']]
        : [["create trigger refuse_links before insert on permits when new.parent is not null begin select raise(abort, 'refused'); end"], ['drop trigger refuse_links']];
      for (const statement of refuse) await sql.raw(statement).execute(db);
      try {
        assert.equal((await decide()).statusCode, 500, 'the links could not be recorded: no decision');
      } finally {
        for (const statement of accept) await sql.raw(statement).execute(db);
      }
      assert.equal((await decide()).json().decision, 'ALLOW');
      const seen = await svc.app.inject({ method: 'GET', url: `${base()}/permits/${childLink}`, headers: auditor.get });
      assert.equal(seen.statusCode, 200, `a link decisions allow is known to the console: ${seen.body}`);
      assert.equal(seen.json().agent, child.did);
      const revoked = await svc.app.inject({ method: 'POST', url: `${base()}/permits/${childLink}/revoke`, headers: issuer.post, payload: {} });
      assert.equal(revoked.statusCode, 200, revoked.body);
      assert.match((await decide()).json().detail ?? '', /^revoked:/);
    });

    test('a root permit the database does not hold (restored from an older copy, the keys kept) is revoked by sending it', async () => {
      const holder = newAgent();
      const root = await issue(svc, holder.did, { actions: ['read'], resources: ['resource://docs/*'] });
      await svc.ts.store.db.deleteFrom('permits').where('commitment', '=', root.commitment).execute();
      const key = await svc.keyHeader([]);
      const decide = async () => (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key,
        payload: { agent: holder.did, permit: root.jws, action: 'read', resource: 'resource://docs/a' } })).json() as { decision: string; detail?: string };
      // It verifies under the project's key, so decisions take it: the console must be able to stop it.
      assert.equal((await decide()).decision, 'ALLOW');
      const revoke = (payload: object) => svc.app.inject({ method: 'POST', url: `${base()}/permits/${root.commitment}/revoke`, headers: issuer.post, payload });
      assert.equal((await revoke({})).statusCode, 404);
      const revoked = await revoke({ permit: root.jws });
      assert.equal(revoked.statusCode, 200, revoked.body);
      assert.deepEqual([revoked.json().status, revoked.json().agent, revoked.json().parent], ['revoked', holder.did, null]);
      assert.match((await decide()).detail ?? '', /^revoked:/);
    });

    test('a delegated link no decision has seen is revoked by sending its chain, which must verify and hold it', async () => {
      const { holder, child, grandchild, root, toChild, toGrandchild } = await threeLinks();
      const childLink = permitCommitment(toChild.split('~').at(-1)!);
      const revoke = (c: string, payload: object) => svc.app.inject({ method: 'POST', url: `${base()}/permits/${c}/revoke`, headers: issuer.post, payload });
      // By its commitment alone the service cannot know the link, and says how to revoke it.
      const unseen = await revoke(childLink, {});
      assert.equal(unseen.statusCode, 404, unseen.body);
      assert.match(unseen.json().detail, /sending its chain as `permit`/);
      // A chain that does not verify, or does not hold the commitment, records and revokes nothing.
      const forged = `${toGrandchild.slice(0, -4)}${toGrandchild.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
      const bad = await revoke(childLink, { permit: forged });
      assert.equal(bad.statusCode, 422, bad.body);
      assert.equal(bad.json().code, 'permit_invalid');
      assert.match(bad.json().detail, /signature/);
      const elsewhere = await revoke(childLink, { permit: root.jws });
      assert.equal(elsewhere.statusCode, 422, elsewhere.body);
      assert.equal(elsewhere.json().code, 'commitment_not_in_chain');
      assert.equal((await svc.app.inject({ method: 'GET', url: `${base()}/permits/${childLink}`, headers: auditor.get })).statusCode, 404);
      // The grandchild's chain holds the child link: sending it revokes the child and all below it.
      const revoked = await revoke(childLink, { permit: toGrandchild });
      assert.equal(revoked.statusCode, 200, revoked.body);
      assert.deepEqual(pick(revoked.json()), { status: 'revoked', revoked_at: revoked.json().revoked_at, revoked_by: revoked.json().revoked_by, revoked_via: null });
      assert.equal(revoked.json().parent, root.commitment);
      const key = await svc.keyHeader([]);
      const decide = async (agent: string, permit: string) => (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key,
        payload: { agent, permit, action: 'read', resource: 'resource://docs/public/a' } })).json() as { decision: string; detail?: string };
      assert.match((await decide(grandchild.did, toGrandchild)).detail ?? '', /^revoked:/);
      assert.match((await decide(child.did, toChild)).detail ?? '', /^revoked:/);
      assert.equal((await decide(holder.did, root.jws)).decision, 'ALLOW');
      assert.equal((await revoke(childLink, { permit: toChild })).statusCode, 409);
      // An expired link can still be revoked by its chain (verification here leaves time aside).
      const parent = newAgent();
      const late = newAgent();
      const longAgo = await issue(svc, parent.did, { actions: ['read'], resources: ['resource://docs/*'] }, { notBefore: new Date(Date.now() - 3_600_000) });
      const rootClaims = JSON.parse(Buffer.from(longAgo.jws.split('.')[1]!, 'base64url').toString('utf8')) as PermitClaims;
      const expiredLink = await signPermitClaims({
        iss: parent.did, sub: late.did, aud: rootClaims.aud, jti: crypto.randomUUID(), iat: rootClaims.nbf, nbf: rootClaims.nbf, exp: rootClaims.nbf + 60,
        gavel: { actions: ['read'], resources: ['resource://docs/*'], parent: longAgo.commitment },
      }, `${parent.did}#x`, parent.sign);
      const expired = await revoke(permitCommitment(expiredLink), { permit: `${longAgo.jws}~${expiredLink}` });
      assert.equal(expired.statusCode, 200, expired.body);
      assert.equal(expired.json().status, 'revoked');
      assert.equal(expired.json().expires_at, new Date((rootClaims.nbf + 60) * 1000).toISOString(), 'a delegated link shows its own expiry');
      const events: { kind: string; data: unknown }[] = [];
      for (let cursor = ''; ;) {
        const page = (await svc.app.inject({ method: 'GET', url: `${base()}/audit?limit=500${cursor}`, headers: auditor.get })).json();
        events.push(...page.items);
        if (!page.next_cursor) break;
        cursor = `&cursor=${encodeURIComponent(page.next_cursor)}`;
      }
      assert.ok(events.some((e) => e.kind === 'permit.revoked' && JSON.stringify(e.data).includes(childLink)), 'the revocation is audited');
    });

    test('agents: register, list with paging (limit in the query string), inspect, freeze and release', async () => {
      const admin = await consoleMember(svc, ['ADMIN']);
      const dids = [newAgent().did, newAgent().did, newAgent().did];
      for (const did of dids) {
        const res = await svc.app.inject({ method: 'POST', url: `${base()}/agents`, headers: admin.post, payload: { did, name: 'bot' } });
        assert.equal(res.statusCode, 201, res.body);
      }
      const dup = await svc.app.inject({ method: 'POST', url: `${base()}/agents`, headers: admin.post, payload: { did: dids[0] } });
      assert.equal(dup.statusCode, 409);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res: { statusCode: number; body: string; json(): any } = await svc.app.inject({ method: 'GET', url: `${base()}/agents?limit=2${cursor ? `&cursor=${cursor}` : ''}`, headers: auditor.get });
        assert.equal(res.statusCode, 200, res.body);
        const page = res.json();
        assert.ok(page.agents.length <= 2);
        seen.push(...page.agents.map((a: { did: string }) => a.did));
        cursor = page.next_cursor;
      } while (cursor);
      for (const did of dids) assert.ok(seen.includes(did));
      assert.equal(new Set(seen).size, seen.length, 'no agent listed twice');
      const bad = await svc.app.inject({ method: 'GET', url: `${base()}/agents?limit=0`, headers: auditor.get });
      assert.equal(bad.statusCode, 400);
      const badCursor = await svc.app.inject({ method: 'GET', url: `${base()}/agents?cursor=nonsense`, headers: auditor.get });
      assert.equal(badCursor.statusCode, 400);
      const frozen = await svc.app.inject({ method: 'POST', url: `${base()}/agents/freeze`, headers: admin.post, payload: { agent: dids[0], reason: 'review' } });
      assert.equal(frozen.json().frozen_by, admin.principalId);
      const one = await svc.app.inject({ method: 'GET', url: `${base()}/agents/${encodeURIComponent(dids[0]!)}`, headers: auditor.get });
      assert.equal(one.json().frozen, true);
      const released = await svc.app.inject({ method: 'POST', url: `${base()}/agents/release`, headers: admin.post, payload: { agent: dids[0] } });
      assert.equal(released.json().frozen, false);
      assert.equal(released.json().released_by, admin.principalId);
      const after = (await svc.app.inject({ method: 'GET', url: `${base()}/agents/${encodeURIComponent(dids[0]!)}`, headers: auditor.get })).json();
      assert.equal(after.released_by, admin.principalId);
      assert.equal(after.released_at, released.json().released_at);
      const missing = await svc.app.inject({ method: 'GET', url: `${base()}/agents/${encodeURIComponent(newAgent().did)}`, headers: auditor.get });
      assert.equal(missing.statusCode, 404);
    });
  });
}

const pick = (p: { status: string; revoked_at: string | null; revoked_by: string | null; revoked_via: string | null }) =>
  ({ status: p.status, revoked_at: p.revoked_at, revoked_by: p.revoked_by, revoked_via: p.revoked_via });
