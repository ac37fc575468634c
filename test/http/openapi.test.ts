// What the OpenAPI document says about errors and roles, and what a client generator needs of it
// (an operationId of its own for each operation, a description and the headers of each response:
// x-request-id, and retry-after where it is sent): problem+json error responses whose
// descriptions name the codes (each one thrown somewhere in src/), exactly the refusals each kind of
// route can give, POST /v1/authorize's codes and reason codes as docs/reason-codes.md has them, and
// the roles each guarded operation demands, and that the document lists exactly the routes the
// router serves. That every code (and success status) a route sends is declared, and every body its
// schema admits, is checked on every test service as it stops (test/support/declared-problems.ts).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { newAgent } from '../support/authorize.ts';
import { PUBLIC_ROUTES, ROUTES } from '../security/role-matrix.data.ts';
import { codesIn, undeclared } from '../support/declared-problems.ts';
import { consoleMember } from '../support/console.ts';
import { REASON_CODES } from '../../src/http/machine/authorize.ts';
import { isRetryAfterCode, Problem, RETRY_AFTER_CODES, retryLater } from '../../src/http/problem.ts';
import { Type } from 'typebox';

const C = '/v1/console/projects/{projectId}';
const M = '/v1/projects/{projectId}';

/**
 * "METHOD /path" of every route the router serves, read off Fastify's printRoutes tree (each line
 * names the part of the path beyond its parent's, then its methods), HEAD copies left out.
 */
function servedRoutes(tree: string): string[] {
  const out: string[] = [];
  const prefix: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    const path = (prefix[depth - 1] ?? '') + m[2]!;
    prefix[depth] = path;
    for (const method of m[3]?.split(', ') ?? []) if (method !== 'HEAD') out.push(`${method} ${path.replace(/:([A-Za-z_]+)/g, '{$1}')}`);
  }
  return out.sort();
}

/** [path, text] of every .ts file below `dir`. */
const srcFiles = (dir: string): [string, string][] => readdirSync(dir, { withFileTypes: true })
  .flatMap((e): [string, string][] => e.isDirectory() ? srcFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [[join(dir, e.name), readFileSync(join(dir, e.name), 'utf8')]] : []);
const srcText = (dir: string): string => srcFiles(dir).map(([, text]) => text).join('\n');

/** Rows of a markdown table in docs/reason-codes.md whose first cell matches `first`. */
function docRows(first: RegExp): string[][] {
  return readFileSync('docs/reason-codes.md', 'utf8').split('\n').filter((l) => l.startsWith('| '))
    .map((l) => l.split('|').slice(1, -1).map((c) => c.trim())).filter((cells) => first.test(cells[0]!));
}

// The document is the same on every engine; the problem it describes is sent from each.
for (const backend of backends()) describe(`OpenAPI errors and roles (${backend.name})`, () => {
  let svc: TestService;
  let doc: any;
  before(async () => {
    svc = await startService(backend);
    doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  });
  after(async () => { await svc.stop(); });

  const op = (method: string, path: string) => {
    const o = doc.paths[path]?.[method.toLowerCase()];
    assert.ok(o, `${method} ${path} is in the document`);
    return o;
  };

  test('the document lists exactly the routes the router serves, each method of each', async () => {
    await svc.app.ready();
    const served = servedRoutes(svc.app.printRoutes({ commonPrefix: false }));
    assert.ok(served.includes('GET /v1/console/projects/{projectId}/memberships') && served.includes('POST /v1/authorize'), 'the tree is read');
    const documented = Object.entries<any>(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`)).sort();
    assert.deepEqual(served, documented);
  });

  test('HEAD, served beside every GET but listed as no operation, is said so, and answers as its GET without a body', async () => {
    await svc.app.ready();
    const heads = svc.app.printRoutes({ commonPrefix: false }).split('\n').filter((l) => /\bHEAD\b/.test(l)).length;
    const gets = Object.values<any>(doc.paths).filter((item) => item.get).length;
    assert.ok(heads > 0 && gets > 0, 'the router serves HEAD copies of the GETs');
    assert.match(doc.info.description, /Every GET operation also answers HEAD: the same status and headers, no body/);
    const key = await svc.keyHeader([]);
    for (const url of ['/healthz', `/v1/projects/${svc.projectId}/sod`, `/v1/projects/${svc.projectId}/policy`, '/v1/projects/prj_00000000000000000000000000/sod']) {
      const [get, head] = await Promise.all(['GET', 'HEAD'].map((method) => svc.app.inject({ method: method as 'GET', url, headers: key })));
      assert.equal(head!.statusCode, get!.statusCode, url);
      assert.equal(head!.headers['content-type'], get!.headers['content-type'], url);
      assert.equal(head!.body, '', url);
    }
  });

  test('a paging cursor is declared as what the service sends: base64url of JSON, not JSON', async () => {
    // @fastify/swagger drops a contentEncoding other than binary or base64; a client reading only
    // contentMediaType would send the cursor as JSON text, which every list refuses.
    const cursors = Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item))
      .flatMap((o) => (o.parameters ?? []).filter((p: any) => p.in === 'query' && p.name === 'cursor'));
    assert.ok(cursors.length >= 4, 'the lists are found');
    for (const p of cursors) assert.deepEqual([p.schema.contentEncoding, p.schema.contentMediaType], ['base64url', 'application/json']);
  });

  test('every error response is problem+json with the Problem schema and says what it means', () => {
    const problemRef = Object.entries<any>(doc.components.schemas).find(([, s]) => s.properties?.code && s.properties?.request_id)?.[0];
    assert.equal(problemRef, 'Problem', 'the Problem schema is a component named by its $id');
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, o] of Object.entries<any>(item)) {
        for (const [status, res] of Object.entries<any>(o.responses)) {
          if (Number(status) < 400) continue;
          const label = `${method} ${path} ${status}`;
          assert.deepEqual(Object.keys(res.content ?? {}), ['application/problem+json'], label);
          assert.equal(res.content['application/problem+json'].schema.$ref, `#/components/schemas/${problemRef}`, label);
          assert.notEqual(res.description, 'Default Response', label);
          assert.match(res.description, /\(codes? [a-z_, ]+\)$/, label);
        }
      }
    }
  });

  test('a 500 that names stored damage does not say its body gives no details (policy_integrity, log_damaged explain it)', () => {
    let damaged = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, o] of Object.entries<any>(item)) {
        const r = o.responses[500];
        if (!r) continue;
        const codes = codesIn(r.description);
        if (codes.length > 1) damaged++;
        if (codes.length > 1) assert.doesNotMatch(r.description, /gives no details/, `${method} ${path}`);
        if (codes.length > 1) assert.match(r.description, /detail names/, `${method} ${path}`);
        else assert.match(r.description, /gives no details/, `${method} ${path}`);
      }
    }
    assert.equal(codesIn(op('GET', '/v1/projects/{projectId}/audit/{auditId}/proof').responses[500].description).includes('log_damaged'), true);
    assert.ok(damaged >= 5, `${damaged} operations name stored damage`);
  });

  test('every operation has a unique operationId, and every response a description and its headers', () => {
    const ids: string[] = [];
    // Codes sent with retry-after are RETRY_AFTER_CODES (the next test); that each answer sent with it is declared is checked as every test service stops.
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, o] of Object.entries<any>(item)) {
        const label = `${method.toUpperCase()} ${path}`;
        // A name a client generator turns into a method as it is.
        assert.match(o.operationId ?? '', /^[a-z][A-Za-z0-9]*$/, `${label} has an operationId`);
        ids.push(o.operationId);
        for (const [status, res] of Object.entries<any>(o.responses)) {
          assert.ok(typeof res.description === 'string' && res.description.length > 0 && res.description !== 'Default Response', `${label} ${status} says what it is`);
          // Every answer carries x-request-id (http/app.ts, its onRequest hook).
          assert.deepEqual(res.headers?.['x-request-id'], { $ref: '#/components/headers/RequestId' }, `${label} ${status} declares x-request-id`);
          const retry = codesIn(res.description).some(isRetryAfterCode);
          assert.equal(res.headers?.['retry-after'] !== undefined, retry, `${label} ${status} declares retry-after exactly where it may be sent`);
          if (retry) assert.deepEqual(res.headers['retry-after'], { $ref: '#/components/headers/RetryAfter' }, `${label} ${status}`);
        }
      }
    }
    assert.deepEqual(ids.filter((id, i) => ids.indexOf(id) !== i), [], 'no operationId is used twice');
    assert.equal(op('POST', '/v1/authorize').operationId, 'authorize');
    assert.equal(op('POST', `${C}/permits`).operationId, 'consoleIssuePermit');
    for (const s of [429, 503]) assert.ok(op('POST', '/v1/console/login').responses[s].headers['retry-after'], `login ${s}`);
    // The header components are OpenAPI 3.1 header objects; every $ref of the document resolves.
    for (const name of ['RequestId', 'RetryAfter']) {
      const h = doc.components.headers?.[name];
      assert.equal(typeof h?.description, 'string', name);
      assert.equal(h.schema?.type, 'string', name);
    }
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? [];
    for (const ref of new Set(refs)) {
      const target = JSON.parse(`{${ref}}`).$ref.replace(/^#\//, '').split('/').reduce((o: any, k: string) => o?.[k], doc);
      assert.ok(target !== undefined, `${ref} resolves`);
    }
  });

  test('retry-after is sent only through retryLater, whose codes are the ones the document declares it for', () => {
    // The header set any other way (a reply.header call, a Problem's headers) names it in a string of src/.
    const naming = srcFiles('src').filter(([, text]) => /['"]retry-after['"]/i.test(text)).map(([path]) => path).sort();
    assert.deepEqual(naming, [join('src', 'http', 'openapi-responses.ts'), join('src', 'http', 'problem.ts')], 'only the document and retryLater name retry-after');
    // @ts-expect-error: a Problem's own headers refuse retry-after (type-check fails if they stop refusing it).
    assert.equal(new Problem(503, 'not_ready', 'x', { headers: { 'retry-after': '1' } }).code, 'not_ready');
    // @ts-expect-error: and retryLater takes no code outside RETRY_AFTER_CODES.
    assert.equal(retryLater(503, 'not_ready', 'x', 1).code, 'not_ready');
    const later = retryLater(409, 'proof_not_ready', 'x', 7, { retry_after_seconds: 7 });
    assert.deepEqual([later.status, later.code, later.detail, later.headers, later.extra], [409, 'proof_not_ready', 'x', { 'retry-after': '7' }, { retry_after_seconds: 7 }]);
    // Each of those codes is listed by a response, which then declares the header (the test above).
    const listed = new Set(Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item))
      .flatMap((o) => Object.values<any>(o.responses)).flatMap((res) => codesIn(res.description)));
    assert.deepEqual(RETRY_AFTER_CODES.filter((c) => !listed.has(c)), [], 'every code sent with retry-after is one some response lists');
    assert.equal(doc.components.headers.RetryAfter.description, `Seconds to wait before retrying; sent with ${RETRY_AFTER_CODES.join(', ')}`);
  });

  test('a route without an operationId of its own is refused as it is added', async () => {
    // A service not yet ready still takes routes; the app's onRoute hook judges each one.
    const other = await startService(backend);
    try {
      const add = (operationId?: string) => () => other.app.get('/v1/extra', { schema: { ...(operationId ? { operationId } : {}), response: { 200: Type.Object({}) } } }, async () => ({}));
      assert.throws(add(), /GET \/v1\/extra has no operationId/);
      assert.throws(add('authorize'), /GET \/v1\/extra has the operationId authorize of another/);
    } finally { await other.stop(); }
  });

  test('every code an error response names is one the service throws', () => {
    const src = srcText('src');
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, o] of Object.entries<any>(item)) {
        for (const [status, res] of Object.entries<any>(o.responses)) {
          for (const code of codesIn(res.description)) assert.ok(src.includes(`'${code}'`), `${method} ${path} ${status}: '${code}' occurs in src/`);
        }
      }
    }
  });

  test('POST /v1/authorize lists its codes per status, as docs/reason-codes.md does, and no status it never gives', () => {
    const o = op('POST', '/v1/authorize');
    assert.ok(o.description?.length > 40, 'the operation has a description');
    const statuses = Object.keys(o.responses).map(Number).filter((s) => s >= 400);
    assert.deepEqual(statuses, [400, 401, 409, 413, 415, 422, 500, 503]);
    const codes = (s: number) => codesIn(o.responses[s].description);
    assert.deepEqual(codes(400), ['malformed_json', 'invalid_request', 'invalid_content_length', 'bad_request', 'both_execution_and_chain_authorization', 'execution_url_not_allowed']);
    assert.match(o.responses[400].description, /invalid_unicode/);
    assert.deepEqual(codes(401), ['unauthorized']);
    assert.deepEqual(codes(409), ['nonce_reused', 'execution_in_progress']);
    assert.deepEqual(codes(422), ['chain_authorization_unavailable', 'unknown_merchant', 'unknown_operation']);
    assert.deepEqual(codes(500), ['internal_error']);
    // The refusals table of docs/reason-codes.md, row by row.
    const rows = docRows(/^\d{3}$/);
    assert.ok(rows.length >= 10);
    for (const [status, cell] of rows) {
      for (const code of cell!.match(/`([a-z_]+)`/g)!.map((c) => c.slice(1, -1))) {
        assert.ok(codes(Number(status)).includes(code), `${status} ${code} is documented on POST /v1/authorize`);
      }
    }
  });

  test('the decision response names every reason code, as docs/reason-codes.md lists them', () => {
    const res = op('POST', '/v1/authorize').responses[200];
    const documented = docRows(/^`[a-z_]+`$/).map(([code]) => code!.slice(1, -1));
    assert.deepEqual([...REASON_CODES].sort(), [...documented].sort());
    for (const code of documented) {
      assert.ok(res.description.includes(code), `200 names ${code}`);
      assert.ok(res.content['application/json'].schema.properties.reason_code.description.includes(code), `reason_code names ${code}`);
    }
  });

  test('permit and agent routes name their own 409, 422 and 503 codes', () => {
    const codes = (method: string, path: string, status: number) => codesIn(op(method, path).responses[status].description);
    assert.deepEqual(codes('POST', `${C}/permits`, 422), ['invalid_permit_claims']);
    assert.deepEqual(codes('POST', `${C}/permits/{commitment}/revoke`, 409), ['already_revoked']);
    // Issuing signs with the permit key (signer/pinned.ts); revoking only verifies a chain sent with
    // it, against the recorded key, so it never answers signing_key_mismatch.
    assert.deepEqual(codes('POST', `${C}/permits`, 503), ['shutting_down', 'database_unavailable', 'storage_full', 'signing_key_mismatch']);
    // Revoking, freezing and releasing wait a bounded time for their lock ahead of decisions (busy).
    assert.deepEqual(codes('POST', `${C}/permits/{commitment}/revoke`, 503), ['shutting_down', 'database_unavailable', 'storage_full', 'busy']);
    assert.deepEqual(codes('POST', `${C}/agents`, 409), ['agent_exists']);
    for (const base of [C, M]) {
      assert.deepEqual(codes('POST', `${base}/agents/freeze`, 409), ['agent_already_frozen']);
      // The second freeze's problem carries the agent's state (who froze it, since when, why): a client must learn of that member.
      assert.match(op('POST', `${base}/agents/freeze`).responses[409].description, /`state` member/);
      assert.deepEqual(codes('POST', `${base}/agents/release`, 409), ['agent_not_frozen']);
      for (const change of ['freeze', 'release']) assert.deepEqual(codes('POST', `${base}/agents/${change}`, 503), ['shutting_down', 'database_unavailable', 'storage_full', 'busy']);
    }
  });

  test('each operation declares exactly the refusals its kind of route gives', () => {
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, o] of Object.entries<any>(item)) {
        const label = `${method.toUpperCase()} ${path}`;
        const statuses = Object.keys(o.responses).map(Number).filter((s) => s >= 400);
        const codes = (status: number) => codesIn(o.responses[status]?.description ?? '');
        const body = o.requestBody !== undefined;
        // Only a body is read and can be too large or of another type; GETs have none.
        assert.equal(statuses.includes(413), body, `${label}: 413 with a body only`);
        assert.equal(statuses.includes(415), body, `${label}: 415 with a body only`);
        // A route that may write (a body, or a console session's last use recorded) is refused while the disk is full.
        const session = (o.security ?? []).some((s: object) => 'session' in s);
        assert.equal(codes(503).includes('storage_full'), body || session, `${label}: storage_full where a write may be made`);
        // Every GET of the API refuses query parameters it does not take (http/app.ts): its input too.
        assert.equal(statuses.includes(400), body || (o.parameters ?? []).length > 0 || (method === 'get' && path.startsWith('/v1/')), `${label}: 400 with input only`);
        // The CSRF token and the site are checked on console mutations (login and register included), never on reads or API keys.
        assert.equal(codes(403).includes('csrf_failed'), path.startsWith('/v1/console/') && method !== 'get', `${label}: csrf_failed on console mutations only`);
        assert.equal(statuses.includes(429), label === 'POST /v1/console/login' || label === 'POST /v1/console/register', `${label}: 429 on login and registration only`);
        assert.equal(codes(401).includes('unauthorized'), o.security !== undefined, `${label}: unauthorized where a credential is needed`);
        assert.equal(codes(403).includes('forbidden'), o.security !== undefined && path.includes('{projectId}'), `${label}: forbidden where the credential must be of the path's project`);
        // A fault of the service is internal_error; the proof, verification, consistency and log routes and the event lists name a damaged
        // log's own (log_damaged: verification where the event has no leaf to check), reading the active policy, activation, simulation and replay a damaged stored version's
        // (policy_integrity), and replay, reading recorded decisions' events, a damaged log's too.
        const damagedLog = /^GET \/v1\/(console\/)?projects\/\{projectId\}\/audit(\/\{auditId\}\/proof|\/consistency|\/log)?$/.test(label) || /\/policy\/replay$/.test(label) || label === 'POST /v1/console/projects/{projectId}/proofs/verify';
        const damagedPolicy = /^GET \/v1\/(console\/)?projects\/\{projectId\}\/policy$/.test(label) || /\/policy\/(activate|simulate|replay)$/.test(label);
        const damaged = [...(damagedPolicy ? ['policy_integrity'] : []), ...(damagedLog ? ['log_damaged'] : [])];
        assert.deepEqual(codes(500), ['internal_error', ...damaged], label);
        assert.ok(codes(503).includes('shutting_down'), label);
      }
    }
    for (const route of PUBLIC_ROUTES) {
      const [method, path] = route.split(' ') as [string, string];
      const o = op(method, path);
      assert.equal(o.security, undefined, route);
      const refusals = [401, 403].flatMap((status) => codesIn(o.responses[status]?.description ?? ''));
      assert.ok(!refusals.includes('unauthorized') && !refusals.includes('forbidden'), `${route}: no authentication refusals`);
    }
    // Nothing refuses a caller of the system routes: only a fault, or the service closing (or, for readyz, not ready).
    for (const path of ['/healthz', '/readyz', '/openapi.json']) {
      assert.deepEqual(Object.keys(op('GET', path).responses).filter((s) => Number(s) >= 400), ['500', '503'], path);
    }
    assert.deepEqual(codesIn(op('GET', '/readyz').responses[503].description), ['shutting_down', 'not_ready']);
    assert.deepEqual(codesIn(op('POST', '/v1/console/login').responses[401].description), ['invalid_credentials']);
  });

  test('a description that explains its codes in words names each code it lists, and none it does not', () => {
    const listed = (description: string) => codesIn(description);
    const every = new Set(Object.values<any>(doc.paths).flatMap((p) => Object.values<any>(p))
      .flatMap((o) => Object.values<any>(o.responses).flatMap((r) => listed(r.description))));
    // In the prose: a code of the document written as `code`.
    const named = (description: string) => [...description.replace(/ \(codes? [a-z_, ]+\)$/, '').matchAll(/`([a-z_]+)`/g)]
      .map((m) => m[1]!).filter((c) => every.has(c));
    let explained = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, o] of Object.entries<any>(item)) {
        for (const [status, r] of Object.entries<any>(o.responses)) {
          const words = named(r.description);
          if (words.length === 0) continue;
          explained++;
          assert.deepEqual([...new Set(words)].sort(), [...listed(r.description)].sort(), `${method.toUpperCase()} ${path} ${status}: ${r.description}`);
        }
      }
    }
    // Those whose codes say different things: which one means the service is stopping.
    for (const [method, path] of [['GET', '/readyz'], ['POST', '/v1/authorize']] as const) {
      assert.ok(named(op(method, path).responses[503].description).includes('shutting_down'), `${method} ${path} 503 explains shutting_down`);
    }
    assert.ok(explained >= 2);
  });

  test('a code a route sends but does not declare is caught', async () => {
    // Every test service checks this as it stops; here on calls whose codes the document once missed.
    const before = svc.problems.length;
    const author = await consoleMember(svc, ['POLICY_AUTHOR']);
    const key = await svc.keyHeader(['POLICY_AUTHOR']);
    const P = `/v1/projects/${svc.projectId}/policy`;
    const CP = `/v1/console/projects/${svc.projectId}/policy`;
    const calls = [
      { method: 'POST', url: '/v1/console/login', payload: { name: author.name, password: `not-${author.password}` } },
      { method: 'POST', url: '/v1/console/login', headers: { origin: 'https://elsewhere.example' }, payload: { name: author.name, password: author.password } },
      { method: 'GET', url: P, headers: key },
      { method: 'POST', url: `${P}/activate`, headers: key, payload: { version: 99 } },
      { method: 'POST', url: `${CP}/simulate`, headers: author.post, payload: { request: {} } },
    ];
    for (const call of calls) await svc.app.inject(call);
    assert.deepEqual(svc.problems.slice(before).map((p) => `${p.method} ${p.route} ${p.status} ${p.code}`), [
      'POST /v1/console/login 401 invalid_credentials',
      'POST /v1/console/login 403 csrf_failed',
      'GET /v1/projects/:projectId/policy 404 no_active_policy',
      'POST /v1/projects/:projectId/policy/activate 404 policy_version_not_found',
      'POST /v1/console/projects/:projectId/policy/simulate 400 agent_required',
    ]);
    assert.deepEqual(undeclared(doc, svc.problems), []);
    // What one not declared looks like (stop() throws with it).
    assert.deepEqual(undeclared(doc, [
      { method: 'GET', route: '/healthz', status: 401, code: 'unauthorized' },
      { method: 'HEAD', route: '/v1/projects/:projectId/policy', status: 404, code: 'no_active_policy' },
      { method: 'POST', route: '/v1/projects/:projectId/policy/activate', status: 409, code: 'nonce_reused' },
    ]), ['GET /healthz 401 unauthorized', 'POST /v1/projects/{projectId}/policy/activate 409 nonce_reused']);
    // A success status the operation does not declare is caught too (minting answers 201, not 200).
    assert.deepEqual(undeclared(doc, [
      { method: 'POST', route: '/v1/console/projects/:projectId/api-keys', status: 201 },
      { method: 'POST', route: '/v1/console/projects/:projectId/api-keys', status: 200 },
    ]), ['POST /v1/console/projects/{projectId}/api-keys 200']);
    // And retry-after sent where the response does not declare it (every 503 does; a 409 of freezing does not).
    assert.deepEqual(undeclared(doc, [
      { method: 'POST', route: '/v1/projects/:projectId/agents/freeze', status: 503, code: 'shutting_down', retryAfter: true },
      { method: 'POST', route: '/v1/projects/:projectId/agents/freeze', status: 409, code: 'agent_already_frozen', retryAfter: true },
      { method: 'POST', route: '/v1/projects/:projectId/agents/freeze', status: 409, code: 'agent_already_frozen', retryAfter: false },
    ]), ['POST /v1/projects/{projectId}/agents/freeze 409 agent_already_frozen retry-after']);
  });

  test('a problem sent under a problem+json response schema keeps its extra members', async () => {
    const headers = await svc.keyHeader([]);
    const agent = newAgent().did;
    const url = `/v1/projects/${svc.projectId}/agents/freeze`;
    assert.equal((await svc.app.inject({ method: 'POST', url, headers, payload: { agent } })).statusCode, 200);
    const again = await svc.app.inject({ method: 'POST', url, headers, payload: { agent } });
    assert.equal(again.statusCode, 409);
    assert.match(String(again.headers['content-type']), /^application\/problem\+json/);
    assert.equal(again.json().code, 'agent_already_frozen');
    assert.equal(again.json().state?.frozen, true);
  });

  test('console mutations require the CSRF header beside the session cookie, as a scheme of their own', () => {
    const csrf = doc.components.securitySchemes.csrf;
    assert.deepEqual({ type: csrf?.type, in: csrf?.in, name: csrf?.name }, { type: 'apiKey', in: 'header', name: 'x-csrf-token' });
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, o] of Object.entries<any>(item)) {
        if (!path.startsWith('/v1/console/') || o.security === undefined) continue;
        // One requirement naming both schemes: a client generated from the document sends both.
        const want = method === 'get' ? [{ session: [] }] : [{ session: [], csrf: [] }];
        assert.deepEqual(o.security, want, `${method.toUpperCase()} ${path}`);
      }
    }
  });

  test('guarded operations state their roles, read off their auth hooks', () => {
    const issue = op('POST', `${C}/permits`);
    assert.deepEqual(issue['x-roles'], ['PERMIT_ISSUER']);
    assert.match(issue.description, /Roles: PERMIT_ISSUER\b/);
    const audit = op('GET', `${M}/audit`);
    assert.deepEqual(audit['x-roles'], ['ADMIN', 'AUDITOR']);
    assert.match(audit.description, /Roles: ADMIN, AUDITOR\b/);
    assert.deepEqual(op('PUT', `${M}/sod`)['x-roles'], ['ADMIN']);
    assert.deepEqual(op('GET', `${M}/agents/state`)['x-roles'], []);
    // Activation checks its role by hand (it audits the refusal first) and states it all the same.
    assert.deepEqual(op('POST', `${M}/policy/activate`)['x-roles'], ['POLICY_AUTHOR']);
    assert.match(op('GET', `${C}/me`).description, /Roles: any member of the project/);
    // Against the role matrix (test/security): a stated list is exactly who may call; 'any' is [].
    for (const e of ROUTES) {
      const roles = op(e.method, e.path)['x-roles'];
      if (e.allowed === 'any') assert.deepEqual(roles, [], `${e.method} ${e.path}`);
      else if (roles?.length) assert.deepEqual([...roles].sort(), [...e.allowed].sort(), `${e.method} ${e.path}`);
    }
  });
});
