// What a new user following docs/getting-started.md with curl gets wrong first, and what the answer
// must then say: which plane takes which credential, that a console mutation needs a JSON body, that
// money counts minor units, which route a mistyped path meant, and which project a key is of.
// Each answer is problem+json with the status and code docs/reason-codes.md and docs/identity.md
// give, and a detail that says what to send instead.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { adminConsoleSuite } from '../support/console.ts';

const MISSING = 'is missing (or null): send a JSON object with content-type: application/json ({} when there is nothing to say)';

for (const backend of backends()) {
  describe(`first mistakes with curl (${backend.name})`, () => {
    const suite = adminConsoleSuite(backend);
    const problem = (res: { statusCode: number; headers: Record<string, unknown>; json(): Record<string, unknown> }, status: number, code: string) => {
      assert.equal(res.statusCode, status);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.equal(res.json().code, code);
      return res.json();
    };

    test('an API key sent to a console route: the 401 says console routes take a sign-in, and where the key belongs', async () => {
      const { authorization } = await suite.svc.keyHeader(['ADMIN']);
      const withKey = problem(await suite.svc.app.inject({ method: 'GET', url: '/v1/console/projects', headers: { authorization } }), 401, 'unauthorized');
      assert.match(String(withKey.detail), /^sign in first \(POST \/v1\/console\/login\)/);
      assert.match(String(withKey.detail), /an API key is not one: console routes take the session cookie a sign-in sets, API keys the machine routes/);
      // Nothing sent: told to sign in, and nothing about keys it did not send.
      const bare = problem(await suite.svc.app.inject({ method: 'GET', url: '/v1/console/projects' }), 401, 'unauthorized');
      assert.equal(bare.detail, 'sign in first (POST /v1/console/login): no live console session (missing, expired or ended)');
    });

    test('a machine route given another scheme than Bearer, or a key cut short: the 401 shows the header to send', async () => {
      const { authorization } = await suite.svc.keyHeader(['ADMIN']);
      const url = `/v1/projects/${suite.svc.projectId}/sod`;
      for (const sent of ['Basic YWRtaW46cGFzc3dvcmQ=', authorization.slice(0, -3), `Token ${authorization.slice('Bearer '.length)}`]) {
        const res = await suite.svc.app.inject({ method: 'GET', url, headers: { authorization: sent } });
        const body = problem(res, 401, 'unauthorized');
        assert.match(String(body.detail), /does not carry a well-formed API key; send "authorization: Bearer <API key>"/, sent);
      }
      assert.equal((await suite.svc.app.inject({ method: 'GET', url, headers: { authorization } })).statusCode, 200, 'the key itself is good');
    });

    test('a console mutation without a body: the error at "" says to send a JSON object, {} when there is nothing to say', async () => {
      const url = `${suite.P}/api-keys`;
      const headers = { cookie: suite.admin.post.cookie, 'x-csrf-token': suite.admin.post['x-csrf-token'] };
      const none = problem(await suite.svc.app.inject({ method: 'POST', url, headers }), 400, 'invalid_request');
      assert.deepEqual(none.errors, [{ pointer: '', code: 'wrong_type', message: MISSING }]);
      // JSON null reads as no body (Fastify validates a missing body as null).
      assert.deepEqual(problem(await suite.svc.app.inject({ method: 'POST', url, headers: suite.admin.post, payload: 'null' }), 400, 'invalid_request').errors, [{ pointer: '', code: 'wrong_type', message: MISSING }]);
      // A body that is JSON but not an object says what it is.
      for (const [payload, what] of [['[]', 'an array'], ['"first key"', 'a string'], ['7', 'a number']]) {
        const res = await suite.svc.app.inject({ method: 'POST', url, headers: suite.admin.post, payload });
        assert.deepEqual(problem(res, 400, 'invalid_request').errors, [{ pointer: '', code: 'wrong_type', message: `must be a JSON object, not ${what}` }], payload);
      }
      // The machine plane reads bodies the same way.
      const decision = await suite.svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: await suite.svc.keyHeader(['ADMIN']) });
      assert.equal((problem(decision, 400, 'invalid_request').errors as { message: string }[])[0]!.message, MISSING);
    });

    test('an amount written in major units (30.5 for 30.50 EUR): the error says minor units, with an example', async () => {
      const res = await suite.svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { ...await suite.svc.keyHeader(['ADMIN']), 'content-type': 'application/json' },
        payload: JSON.stringify({ agent: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', permit: 'x.y.z', action: 'payments.create', resource: 'resource://payments/eu/1', amount: { minor: 30.5, currency: 'EUR' } }) });
      assert.deepEqual(problem(res, 400, 'invalid_request').errors, [{ pointer: '/amount/minor', code: 'wrong_type',
        message: 'must be a whole number, not 30.5: the amount in minor units of the currency (cents for EUR: 3050 is 30.50 EUR)' }]);
      // Text where a number is wanted keeps the type's own words: it is not a unit mistake.
      const text = await suite.svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { ...await suite.svc.keyHeader(['ADMIN']), 'content-type': 'application/json' },
        payload: JSON.stringify({ agent: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', permit: 'x.y.z', action: 'payments.create', resource: 'resource://payments/eu/1', amount: { minor: '3050', currency: 'EUR' } }) });
      assert.deepEqual(problem(text, 400, 'invalid_request').errors, [{ pointer: '/amount/minor', code: 'wrong_type', message: 'must be integer' }]);
    });

    test('a path a slip away from a route (trailing slash, /v1, the other plane): the 404 names the route', async () => {
      const P = suite.svc.projectId;
      const audit = 'aud_01m8gsk8m1tvw5ey1gdxw6p03k';
      for (const [method, url, hint] of [
        ['POST', '/v1/authorize/', 'did you mean POST /v1/authorize?'],
        ['POST', '/authorize', 'did you mean POST /v1/authorize?'],
        ['POST', '/V1/authorize', 'did you mean POST /v1/authorize?'],
        ['GET', '/healthz/', 'did you mean GET /healthz?'],
        ['POST', `/v1/projects/${P}/permits`, `did you mean POST /v1/console/projects/${P}/permits? (a console route: it takes the session cookie of a sign-in, not an API key)`],
        ['GET', `/v1/console/projects/${P}/audit/${audit}/proof`, `did you mean GET /v1/projects/${P}/audit/${audit}/proof? (a machine route: it takes an API key, authorization: Bearer <API key>)`],
      ] as const) {
        const res = await suite.svc.app.inject({ method, url, headers: suite.admin.get });
        assert.equal(problem(res, 404, 'not_found').detail, `no route ${method} ${url}; ${hint}`);
      }
      // Nothing near: the plain answer.
      assert.equal(problem(await suite.svc.app.inject({ method: 'GET', url: '/v1/nothing' }), 404, 'not_found').detail, 'no route GET /v1/nothing');
      // A route of the respelt path, but not of this method: nothing suggested.
      assert.equal(problem(await suite.svc.app.inject({ method: 'DELETE', url: '/authorize' }), 404, 'not_found').detail, 'no route DELETE /authorize');
    });

    test('a machine route under a project the key is not of (a $PROJECT left null): the 403 names the key\'s project', async () => {
      const headers = await suite.svc.keyHeader(['ADMIN']);
      for (const named of ['null', 'prj_01m8gshmygkjfvhz8jhyxx7000']) {
        const res = await suite.svc.app.inject({ method: 'GET', url: `/v1/projects/${named}/sod`, headers });
        assert.equal(problem(res, 403, 'forbidden').detail, `this API key belongs to project ${suite.svc.projectId}, not to the one the path names ("${named}")`);
      }
    });
  });
}
