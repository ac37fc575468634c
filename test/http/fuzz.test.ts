// Hostile input on every route of GET /openapi.json, sent with credentials that pass the role
// check (so the body reaches validation and the handler): null and non-object bodies, missing
// fields, each field of a plausible body replaced by a wrong type, a huge string, unicode (lone
// surrogates, NUL, right-to-left marks) and an extra field; hostile path parameters and query
// values (a NUL among them). No answer may be a 500, and every 4xx must be problem+json with a `code`.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { ROLES, type Role } from '../../src/domain/access/roles.ts';
import { didKeyFromPublicKey } from '../../src/domain/permit/index.ts';

const raw = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
const DID = didKeyFromPublicKey(new Uint8Array(raw));

/** A plausible value for a JSON schema, good enough to pass most validation. */
function sample(schema: any, name = ''): unknown {
  if (!schema || typeof schema !== 'object') return null;
  if ('const' in schema) return schema.const;
  if (schema.enum) return schema.enum[0];
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return sample(alternatives.find((a: any) => a.type !== 'null') ?? alternatives[0], name);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const key of schema.required ?? []) out[key] = sample(schema.properties?.[key], key);
      return out;
    }
    case 'array': return Array.from({ length: Math.max(1, schema.minItems ?? 0) }, () => sample(schema.items, name));
    case 'integer': case 'number': return Math.max(1, schema.minimum ?? 1);
    case 'boolean': return true;
    case 'string': {
      const p = String(schema.pattern ?? '');
      if (schema.format === 'date-time') return new Date(Date.now() + 3_600_000).toISOString();
      if (p.includes('did:')) return DID;
      if (p.includes('resource:')) return 'resource://fuzz/a';
      if (p.includes('[A-Z]{3}')) return 'EUR';
      if (/\[0-9a-f\]\{64\}/.test(p)) return 'ab'.repeat(32);
      const prefix = /^\^([a-z]{3})_/.exec(p);
      if (prefix) return `${prefix[1]}_${'0'.repeat(26)}`;
      if (name === 'password') return 'correct horse battery staple';
      if (name === 'role') return 'AUDITOR';
      return 'fuzz-' + 'x'.repeat(Math.max(0, (schema.minLength ?? 0) - 5));
    }
    default: return {};
  }
}

const HOSTILE: unknown[] = [
  null, 0, -1, 1.5, 2 ** 64, true, [], {}, [null], '', 'x'.repeat(40_000),
  '\ud800', '\udfff-tail', '\u0000', '\u202e\u0645\u0631\u062d\u0628\u0627', '😀'.repeat(300), { $ne: 1 }, '../../etc/passwd',
];

const PATH_VALUES = ['x', '\u00e9\u{1F600}', 'a'.repeat(3000), '%00', 'a\u0000b', '..%2f..', 'ADMIN', DID];

// On each engine: PostgreSQL refuses what SQLite stores (a NUL), so a 500 can be one engine's alone.
for (const backend of backends()) describe(`hostile input on every route (${backend.name})`, () => {
  let svc: TestService;
  let doc: any;
  let machine: { authorization: string };
  let person: ConsoleMember;
  let target: string;
  const roles = [...ROLES] as Role[];
  /** Logout and revocations end or narrow a session: sign in afresh after sending to them. */
  const refresh = async (path: string) => { if (/logout|revoke/.test(path)) person = await consoleMember(svc, roles); };

  before(async () => {
    svc = await startService(backend);
    doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    machine = await svc.keyHeader(roles);
    target = (await svc.member(['AUDITOR'])).principalId;
    person = await consoleMember(svc, roles);
  });
  after(async () => { await svc.stop(); });

  function headers(path: string, hasBody: boolean): Record<string, string> {
    if (path.startsWith('/v1/console/projects')) return hasBody ? { ...person.post } : { ...person.get };
    if (path.startsWith('/v1/console')) return hasBody ? { 'content-type': 'application/json' } : {};
    return { ...machine, ...(hasBody ? { 'content-type': 'application/json' } : {}) };
  }

  function url(path: string, override?: string): string {
    return path.replace('{projectId}', svc.projectId).replace(/\{([A-Za-z]+)\}/g, (_, name: string) =>
      override !== undefined ? encodeURIComponent(override)
        : name === 'principalId' ? target
        : name === 'agentDid' ? encodeURIComponent(DID)
        : name === 'commitment' ? 'ab'.repeat(32)
        : name === 'role' ? 'AUDITOR'
        : `${name.slice(0, 3)}_${'0'.repeat(26)}`);
  }

  async function send(label: string, method: string, target: string, hdrs: Record<string, string>, payload?: string) {
    const res = await svc.app.inject({ method: method as 'POST', url: target, headers: hdrs, ...(payload !== undefined ? { payload } : {}) });
    assert.ok(res.statusCode < 500, `${label}: answered ${res.statusCode} ${res.body.slice(0, 300)}`);
    if (res.statusCode >= 400) {
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/, `${label}: ${res.statusCode} is problem+json`);
      const body = res.json();
      assert.equal(typeof body.code, 'string', `${label}: problem has a code`);
      assert.equal(body.status, res.statusCode, label);
    }
    return res;
  }

  test('bodies: null, non-objects, missing, wrong-typed, huge, unicode and extra fields', async () => {
    let sent = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const schema = op.requestBody?.content?.['application/json']?.schema;
        if (!schema) continue;
        const target = url(path);
        const hdrs = headers(path, true);
        const label = `${method.toUpperCase()} ${path}`;
        for (const whole of ['null', '[]', '1', '"x"', 'true', '{}', '['.repeat(20_000) + ']'.repeat(20_000), '{"\\ud800": 1}']) {
          await send(`${label} body ${whole}`, method, target, hdrs, whole); sent++;
        }
        const base = sample(schema) as Record<string, unknown>;
        await send(`${label} sample`, method, target, hdrs, JSON.stringify(base)); sent++;
        await send(`${label} extra field`, method, target, hdrs, JSON.stringify({ ...base, zz_extra: 1 })); sent++;
        for (const key of Object.keys(schema.properties ?? {})) {
          for (const value of HOSTILE) {
            await send(`${label} ${key}=${JSON.stringify(value)?.slice(0, 30)}`, method, target, hdrs, JSON.stringify({ ...base, [key]: value })); sent++;
          }
          const inner = schema.properties[key];
          if (inner?.type === 'object' && inner.properties) {
            for (const sub of Object.keys(inner.properties)) {
              for (const value of HOSTILE) {
                const nested = { ...(sample(inner) as object), [sub]: value };
                await send(`${label} ${key}.${sub}=${JSON.stringify(value)?.slice(0, 30)}`, method, target, hdrs, JSON.stringify({ ...base, [key]: nested })); sent++;
              }
            }
          }
        }
        await refresh(path);
      }
    }
    assert.ok(sent > 500, `sent ${sent} bodies`);
  });

  test('an agent DID of the longest accepted length is a path parameter like any other', async () => {
    const long = 'did:web:' + 'a'.repeat(504);
    const res = await send('long DID', 'GET', `/v1/console/projects/${svc.projectId}/agents/${encodeURIComponent(long)}`, { ...person.get });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'not_found');
  });

  test('path parameters and query strings', async () => {
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const hasBody = Boolean(op.requestBody);
        const hdrs = headers(path, hasBody);
        const label = `${method.toUpperCase()} ${path}`;
        const body = hasBody ? JSON.stringify(sample(op.requestBody.content['application/json'].schema)) : undefined;
        if (path.includes('{')) {
          for (const value of PATH_VALUES) {
            const target = path.includes('{projectId}') && !/\{(?!projectId)/.test(path)
              ? path.replace('{projectId}', encodeURIComponent(value))
              : url(path, value).replace(encodeURIComponent(value), encodeURIComponent(value)).replace(/^(\/v1\/(console\/)?projects\/)[^/]+/, `$1${svc.projectId}`);
            await send(`${label} param ${value.slice(0, 20)}`, method, target, hdrs, body);
          }
        }
        // Raw, malformed percent-escapes reach the router before any route does.
        if (path.includes('{')) {
          const bad = url(path).replace(/\/[^/]*$/, '/%E0%A4%A');
          await send(`${label} bad escape`, method, bad, hdrs, body);
        }
        const query = (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name);
        for (const name of query) {
          for (const value of ['', '-1', '0', '1.5', '99999999999999999999', 'true', '%FF', '\u{1F600}', 'a'.repeat(3000), '2025-13-45T99:99:99Z']) {
            await send(`${label} ?${name}=${value.slice(0, 20)}`, method, `${url(path)}?${name}=${encodeURIComponent(value)}`, hdrs, body);
          }
          await send(`${label} ?${name} twice`, method, `${url(path)}?${name}=1&${name}=2`, hdrs, body);
        }
        await refresh(path);
      }
    }
  });
});
