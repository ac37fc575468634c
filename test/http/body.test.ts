// JSON bodies on every route (src/http/body.ts): bytes that are not UTF-8, members that would set a
// prototype, charsets and content codings the parser does not read, and empty bodies.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { recordedDecision } from '../support/decisions.ts';
import { parseJson } from '../../src/http/body.ts';
import { beforeBodyCredentials } from '../support/console.ts';

type Res = { statusCode: number; headers: Record<string, unknown>; body: string; json(): any };

function assertProblem(res: Res, status: number, code: string, label = '') {
  assert.equal(res.statusCode, status, `${label}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, label);
  assert.equal(res.json().code, code, label);
  assert.equal(res.json().request_id, res.headers['x-request-id'], label);
}

/** The field errors of an invalid_request, as {pointer, code}. */
const fieldErrors = (res: Res) => (res.json().errors as { pointer: string; code: string }[]).map(({ pointer, code }) => ({ pointer, code }));

const JSON_TYPE = { 'content-type': 'application/json' };
const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };

for (const backend of backends()) {
  describe(`JSON bodies on ${backend.name}`, () => {
    let svc: TestService;
    let bodyRoutes: { method: 'POST' | 'PUT' | 'PATCH'; url: string; credentials: Record<string, string> }[];
    let key: { authorization: string };
    const authorize = (payload: string | Buffer | Readable, headers: Record<string, string> = JSON_TYPE) =>
      svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { ...key, ...headers }, payload });
    const audited = async () => Number((await svc.ts.store.db.selectFrom('audit_events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    /** A body POST /v1/authorize decides on (200), with `intent` as given (raw JSON text). */
    const decisionBody = async (intentJson: string) => {
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, PAY);
      return `{"agent":"${agent.did}","permit":"${jws}","action":"pay","resource":"resource://shop/1","amount":{"minor":5,"currency":"EUR"},"intent":${intentJson}}`;
    };

    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      bodyRoutes = [];
      const credentialsFor = await beforeBodyCredentials(svc);
      for (const [path, item] of Object.entries<any>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(item)) {
          if (!op.requestBody) continue;
          const url = path.replace('{projectId}', svc.projectId).replace(/\{[A-Za-z]+\}/g, 'x_00000000000000000000000000');
          const limit = /Body limit: (\d+) bytes/.exec(op.requestBody.content?.['application/json']?.schema?.description ?? '');
          bodyRoutes.push({ method: method.toUpperCase() as 'POST', url, credentials: credentialsFor(path, limit ? Number(limit[1]) : 64 * 1024) });
        }
      }
      assert.ok(bodyRoutes.length > 10);
    });
    after(async () => { await svc.stop(); });

    test('a body that is not UTF-8 is 400 invalid_unicode on every route, before authentication', async () => {
      const bad = Buffer.concat([Buffer.from('{"name": "a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
      for (const { method, url, credentials } of bodyRoutes) {
        const res = await svc.app.inject({ method, url, headers: { ...credentials, ...JSON_TYPE }, payload: bad });
        assertProblem(res, 400, 'invalid_request', `${method} ${url}`);
        assert.deepEqual(fieldErrors(res), [{ pointer: '', code: 'invalid_unicode' }]);
      }
    });

    test('without credentials, what the parser refuses is 400 and a lone surrogate or a NUL is 401 (the check runs with the schema, after authentication), as docs/reason-codes.md says', async () => {
      const anonymous = (payload: string) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: JSON_TYPE, payload });
      for (const [payload, code] of [['{"a":1,"a":2}', 'duplicate_member'], ['{"a":1e400}', 'inexact_number'], ['{"a":5000.0000000000001}', 'inexact_number'], ['{"__proto__":1}', 'forbidden_member'], [`{"a":${'['.repeat(129)}${']'.repeat(129)}}`, 'too_deep']]) {
        const res = await anonymous(payload!);
        assertProblem(res, 400, 'invalid_request', payload);
        assert.equal(fieldErrors(res)[0]?.code, code, payload);
      }
      for (const payload of ['{"a":"\\ud800"}', '{"a":"\\u0000"}']) assertProblem(await anonymous(payload), 401, 'unauthorized', payload);
      const surrogate = await authorize('{"a":"\\ud800"}');
      assertProblem(surrogate, 400, 'invalid_request');
      assert.deepEqual(fieldErrors(surrogate), [{ pointer: '/a', code: 'invalid_unicode' }]);
    });

    test('POST /v1/authorize refuses bytes that are not UTF-8 and records nothing (they were audited as U+FFFD)', async () => {
      const text = await decisionBody('"INTENT"');
      const [head, tail] = text.split('INTENT') as [string, string];
      const before = await audited();
      // Invalid bytes, an overlong '/', an encoded surrogate, and a sequence cut short.
      for (const bytes of [[0xff, 0xfe], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
        const res = await authorize(Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)]));
        assertProblem(res, 400, 'invalid_request', JSON.stringify(bytes));
        assert.deepEqual(fieldErrors(res), [{ pointer: '', code: 'invalid_unicode' }]);
      }
      assert.equal(await audited(), before);
    });

    test('well-formed UTF-8 is accepted: multibyte characters, a U+FFFD that was sent, a byte order mark, a character split across chunks', async () => {
      const text = await decisionBody('"caf\u00e9 \u20ac \u{1F600} \uFFFD"');
      const res = await authorize('\uFEFF' + text);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await recordedDecision(svc.ts.store.db, res.json().audit_id)).intent, 'caf\u00e9 \u20ac \u{1F600} \uFFFD');
      const bytes = Buffer.from(await decisionBody('"\u{1F600}"'));
      const split = bytes.indexOf(Buffer.from('\u{1F600}')) + 2;
      const chunked = await authorize(Readable.from([bytes.subarray(0, split), bytes.subarray(split)]), JSON_TYPE);
      assert.equal(chunked.statusCode, 200, chunked.body);
    });

    test('a member that would set a prototype is 400 invalid_request forbidden_member at its pointer, not malformed JSON', async () => {
      const cases: [string, { pointer: string; code: string }[]][] = [
        ['{"__proto__": {"admin": true}}', [{ pointer: '/__proto__', code: 'forbidden_member' }]],
        ['{"a": [{"b/c": {"\\u005f_proto__": 1}}]}', [{ pointer: '/a/0/b~1c/__proto__', code: 'forbidden_member' }]],
        ['{"x": {"constructor": {"prototype": {"admin": true}}}}', [{ pointer: '/x/constructor', code: 'forbidden_member' }]],
      ];
      for (const [payload, errors] of cases) {
        for (const { method, url, credentials } of bodyRoutes) {
          const res = await svc.app.inject({ method, url, headers: { ...credentials, ...JSON_TYPE }, payload });
          assertProblem(res, 400, 'invalid_request', `${method} ${url} ${payload}`);
          assert.deepEqual(fieldErrors(res), errors);
          assert.match(res.json().errors[0].message, /__proto__|constructor/);
        }
      }
      // A constructor member without a prototype is data like any other (here refused by the schema).
      const plain = await authorize('{"constructor": {"name": "x"}}');
      assertProblem(plain, 400, 'invalid_request');
      assert.ok(fieldErrors(plain).some((e) => e.pointer === '/constructor' && e.code === 'unknown_field'));
      assertProblem(await authorize('{"a": '), 400, 'malformed_json');
    });

    test('a member named twice in one object is 400 invalid_request duplicate_member at its pointer, and the decision is not made', async () => {
      const cases: [string, { pointer: string; code: string }[]][] = [
        ['{"a": 1, "a": 2}', [{ pointer: '/a', code: 'duplicate_member' }]],
        // The same name spelled with an escape, nested in an array, beside strings that hold quotes, colons and backslashes.
        [String.raw`{"x": ["\\", {"k\"": "a\":", "b/c": 1, "b\u002fc": 2}], "y": {"\\": ":"}}`, [{ pointer: '/x/1/b~1c', code: 'duplicate_member' }]],
        ['{"a": {"b": 1}, "c": [1, {"d": {}}], "a": [], "a": 3}', [{ pointer: '/a', code: 'duplicate_member' }, { pointer: '/a', code: 'duplicate_member' }]],
      ];
      for (const [payload, errors] of cases) {
        assert.doesNotThrow(() => JSON.parse(payload), payload);
        for (const { method, url, credentials } of bodyRoutes) {
          const res = await svc.app.inject({ method, url, headers: { ...credentials, ...JSON_TYPE }, payload });
          assertProblem(res, 400, 'invalid_request', `${method} ${url} ${payload}`);
          assert.deepEqual(fieldErrors(res), errors, payload);
          assert.match(res.json().errors[0].message, /appears more than once/);
        }
      }
      // On the decision route: the agent's or the amount's second spelling would otherwise win, unaudited as sent.
      const body = await decisionBody('"i"');
      const before = await audited();
      const twice = body.replace('"amount":{"minor":5,', '"amount":{"minor":5000,"minor":5,');
      const res = await authorize(twice);
      assertProblem(res, 400, 'invalid_request');
      assert.deepEqual(fieldErrors(res), [{ pointer: '/amount/minor', code: 'duplicate_member' }]);
      assert.equal(await audited(), before);
      // Names that only look alike, and strings holding '"a":', are not duplicates.
      const alike = await authorize(body.replace('"intent":"i"', String.raw`"intent":"\"a\": \"a\":"`));
      assert.equal(alike.statusCode, 200, alike.body);
      for (const text of ['{"A": 1, "a": 2, "a ": 3}', '{"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]}', String.raw`{"a\"": 1, "a": "\\", "a\\": 2}`]) {
        assert.deepEqual(parseJson(Buffer.from(text)), JSON.parse(text), text);
      }
    });

    test('a charset other than UTF-8 and a content coding other than identity are 415 on every route', async () => {
      for (const { method, url, credentials } of bodyRoutes) {
        for (const type of ['application/json; charset=utf-16', 'application/json;charset="ISO-8859-1"', 'application/json; foo=bar; charset=latin1', 'application/json; Charset=latin1']) {
          assertProblem(await svc.app.inject({ method, url, headers: { ...credentials, 'content-type': type }, payload: '{}' }), 415, 'unsupported_media_type', `${method} ${url} ${type}`);
        }
        const gzip = await svc.app.inject({ method, url, headers: { ...credentials, ...JSON_TYPE, 'content-encoding': 'gzip' }, payload: gzipSync('{}') });
        assertProblem(gzip, 415, 'unsupported_media_type', `${method} ${url} gzip`);
        assert.equal(gzip.headers['accept-encoding'], 'identity');
      }
      const body = await decisionBody('"i"');
      for (const type of ['application/json; charset=utf-8', 'application/json; charset="UTF-8"', 'Application/JSON;Charset=utf8']) {
        assert.equal((await authorize(body, { 'content-type': type })).statusCode, 200, type);
      }
      // Content codings are case-insensitive (RFC 9110 §8.4.1).
      for (const coding of ['identity', 'IDENTITY']) {
        assert.equal((await authorize(await decisionBody('"i"'), { ...JSON_TYPE, 'content-encoding': coding })).statusCode, 200, coding);
      }
    });

    /** Each body, sent to every route that takes one, is 400 invalid_request with `code` at exactly these pointers. */
    const refusedOnEveryRoute = async (cases: [string, string[]][], code: string) => {
      for (const [payload, pointers] of cases) {
        for (const { method, url, credentials } of bodyRoutes) {
          const res = await svc.app.inject({ method, url, headers: { ...credentials, ...JSON_TYPE }, payload });
          assertProblem(res, 400, 'invalid_request', `${method} ${url} ${payload}`);
          assert.deepEqual(fieldErrors(res), pointers.map((pointer) => ({ pointer, code })), payload);
        }
      }
    };

    test('a number JSON does not carry exactly is 400 inexact_number at its pointer, on every route (it was changed, or a 500)', async () => {
      const cases: [string, string[]][] = [
        ['{"a": 9007199254740993}', ['/a']],
        ['{"x": [1, {"y": 1e400}], "z": -9007199254740992}', ['/x/1/y', '/z']],
      ];
      await refusedOnEveryRoute(cases, 'inexact_number');
      // An execution payload is where it mattered: the merchant would have been sent another number.
      const body = JSON.parse(await decisionBody('"i"'));
      const res = await authorize(JSON.stringify({ ...body, execution: { merchant: 'm', operation: 'o', nonce: 'n-1', payload: {} } }).replace('"payload":{}', '"payload":{"account":12345678901234567890}'));
      assertProblem(res, 400, 'invalid_request');
      assert.deepEqual(fieldErrors(res), [{ pointer: '/execution/payload/account', code: 'inexact_number' }]);
      for (const text of ['{"a": 9007199254740991, "b": -9007199254740991, "c": 0.1, "d": 1.5e-300, "e": 3.141592653589793}']) {
        assert.deepEqual(parseJson(Buffer.from(text)), JSON.parse(text), text);
      }
    });

    test('a number written as a non-integer that reads as an integer is 400 inexact_number: 5000.0000000000001 is not 5000', async () => {
      const cases: [string, string[]][] = [
        ['{"a": 5000.0000000000001}', ['/a']],
        ['{"x": [4999.9999999999999, {"y": 1e-400}], "s": "5000.0000000000001", "ok": 5000.000}', ['/x/0', '/x/1/y']],
      ];
      await refusedOnEveryRoute(cases, 'inexact_number');
      // The amount of a decision: it was decided, and audited, as 5000.
      const body = JSON.parse(await decisionBody('"i"'));
      const res = await authorize(JSON.stringify(body).replace('"minor":5', '"minor":5.0000000000000001'));
      assertProblem(res, 400, 'invalid_request');
      assert.deepEqual(fieldErrors(res), [{ pointer: '/amount/minor', code: 'inexact_number' }]);
      // Integers however written, and fractions that read as fractions, keep JSON's reading.
      for (const text of ['{"a": 5e3, "b": 5000.000, "c": 120e-1, "d": 0.1, "e": -0.0, "f": "9.5e-400", "g": 1.5e1}']) {
        assert.deepEqual(parseJson(Buffer.from(text)), JSON.parse(text), text);
      }
      assert.equal((await authorize(JSON.stringify(body).replace('"minor":5', '"minor":5.000'))).statusCode, 200);
    });

    test('a body nested deeper than 128 levels is 400 too_deep before anything is decided (a payload 6,000 deep was a 500 after its ALLOW committed)', async () => {
      const deep = (n: number) => '['.repeat(n) + '1' + ']'.repeat(n);
      const body = JSON.parse(await decisionBody('"i"'));
      const before = await audited();
      for (const n of [128, 6000]) {
        const res = await authorize(JSON.stringify({ ...body, execution: { merchant: 'm', operation: 'o', nonce: `deep-${n}`, payload: {} } }).replace('"payload":{}', `"payload":{"x":${deep(n)}}`));
        assertProblem(res, 400, 'invalid_request', String(n));
        assert.deepEqual(fieldErrors(res), [{ pointer: '', code: 'too_deep' }]);
      }
      assert.equal(await audited(), before, 'nothing decided, nothing audited');
      assert.doesNotThrow(() => parseJson(Buffer.from(deep(128))));
      assert.throws(() => parseJson(Buffer.from(`[${deep(128)}]`)), (e: { errors?: { code: string }[] }) => e.errors?.[0]?.code === 'too_deep');
      for (const { method, url, credentials } of bodyRoutes) {
        const res = await svc.app.inject({ method, url, headers: { ...credentials, ...JSON_TYPE }, payload: `{"a":${deep(200)}}` });
        assertProblem(res, 400, 'invalid_request', `${method} ${url}`);
      }
    });

    test('an answer lists at most 100 field errors, with pointers cut at 1,000 characters: its size is bounded (a body of 60 KB made 10 MB and ran the process out of memory)', async () => {
      const long = 'A'.repeat(30_000);
      const bodies = [
        `{"${long}":{${Array.from({ length: 2_000 }, () => '"a":0').join(',')}}}`,
        `{"${long}":[${Array.from({ length: 2_000 }, () => '1e400').join(',')}]}`,
        `{"${long}":[${Array.from({ length: 2_000 }, () => '{"__proto__":0}').join(',')}]}`,
      ];
      for (const payload of bodies) {
        assert.ok(payload.length < 64 * 1024);
        const res = await authorize(payload);
        assertProblem(res, 400, 'invalid_request', payload.slice(30_000, 30_020));
        const errors = res.json().errors as { pointer: string; code: string }[];
        assert.equal(errors.length, 101);
        assert.equal(errors.at(-1)!.code, 'too_many_errors');
        assert.ok(errors.every((e) => e.pointer.length <= 1_001));
        // 101 errors of at most 1,001-character pointers: bounded, whatever the body holds.
        assert.ok(res.body.length < 150_000, `answer of ${res.body.length} bytes to a body of ${payload.length}`);
      }
    });

    test('an answer to a body or query its schema refuses lists at most 100 field errors on every route (1,400 unknown query parameters made a 125 KB answer)', async () => {
      const members = `{${Array.from({ length: 2_000 }, (_, i) => `"m${i}":0`).join(',')}}`;
      for (const { method, url, credentials } of bodyRoutes) {
        const res = await svc.app.inject({ method, url, headers: { ...credentials, ...JSON_TYPE }, payload: members });
        if (res.statusCode !== 400) continue; // refused earlier (401, 403, 404: no route of that id)
        const errors = res.json().errors as { code: string }[];
        assert.ok(errors.length <= 101, `${method} ${url}: ${errors.length} errors`);
        if (errors.length === 101) assert.equal(errors.at(-1)!.code, 'too_many_errors');
      }
      const query = Array.from({ length: 1_400 }, (_, i) => `q${i}=1`).join('&');
      const res = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/executions?${query}`, headers: key });
      assertProblem(res, 400, 'invalid_request');
      const errors = res.json().errors as { code: string }[];
      assert.equal(errors.length, 101);
      assert.equal(errors.at(-1)!.code, 'too_many_errors');
    });

    test('malformed JSON says where it breaks, without echoing the body', async () => {
      const cases: [string, string][] = [
        ['{"agent": "did:key:z" "permit": 1}', 'the body is not valid JSON: unexpected character at offset 22 (line 1, column 23)'],
        ['{\n  "a": 1,\n  "b" 2}', 'the body is not valid JSON: unexpected character at offset 18 (line 3, column 7)'],
        ['{"agent":', 'the body is not valid JSON: it ends before the value is complete'],
        ['{"secret-looking": x}', 'the body is not valid JSON: unexpected character "x"'],
        // Characters a reader cannot see are named by code point.
        ['{"secret-looking": \u0001}', 'the body is not valid JSON: unexpected character U+0001'],
      ];
      for (const [payload, detail] of cases) {
        const res = await authorize(payload);
        assertProblem(res, 400, 'malformed_json', payload);
        assert.equal(res.json().detail, detail, payload);
        assert.ok(!res.body.includes('secret-looking'));
      }
    });

    test('empty bodies: declared JSON is malformed_json; with no content-type the body is absent, wrong_type at ""', async () => {
      const declared = await authorize('');
      assertProblem(declared, 400, 'malformed_json');
      const absent = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key });
      assertProblem(absent, 400, 'invalid_request');
      assert.deepEqual(fieldErrors(absent), [{ pointer: '', code: 'wrong_type' }]);
      assertProblem(await authorize(Buffer.alloc(70 * 1024, 0x20)), 413, 'payload_too_large');
    });
  });
}

test('a body with numbers of both inexact kinds names every one of them, as docs/reason-codes.md says (the rounded one went unnamed until the other was fixed)', () => {
  const text = '{"w": 5000.0000000000001, "z": 9007199254740993, "v": [1e400, 4999.9999999999999]}';
  assert.throws(() => parseJson(Buffer.from(text)), (e: { errors?: { pointer: string; code: string }[] }) => {
    assert.deepEqual(e.errors?.map(({ pointer, code }) => ({ pointer, code })), ['/w', '/z', '/v/0', '/v/1'].map((pointer) => ({ pointer, code: 'inexact_number' })));
    return true;
  });
});
