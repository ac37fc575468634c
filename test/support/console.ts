// Console helpers for tests: sign in through the real login route and carry the session cookie
// and CSRF token into `svc.app.inject` calls.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, after } from 'node:test';
import type { Role } from '../../src/domain/access/roles.ts';
import { newId } from '../../src/lib/ids.ts';
import { hashPassword } from '../../src/lib/passwords.ts';
import type { Backend } from './backends.ts';
import { startService, type TestService } from './service.ts';

export interface ConsoleLogin {
  /** Value for the `cookie` request header: the session and CSRF cookies. */
  cookie: string;
  /** The CSRF token, to send as `x-csrf-token` on mutations. */
  csrf: string;
  principalId: string;
}

/** Signs in through POST /v1/console/login; fails the test when the login does not succeed. */
export async function login(svc: TestService, name: string, password: string): Promise<ConsoleLogin> {
  const res = await svc.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name, password } });
  assert.equal(res.statusCode, 200, `login of ${name}: ${res.body}`);
  const cookie = res.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  const body = res.json();
  return { cookie, csrf: body.csrf_token, principalId: body.principal_id };
}

export interface ConsoleMember {
  principalId: string;
  name: string;
  password: string;
  /** Headers for GET requests (the cookie only). */
  get: { cookie: string };
  /** Headers for mutations: cookie, x-csrf-token and content-type. */
  post: { cookie: string; 'x-csrf-token': string; 'content-type': string };
}

/** A new person who is a member of the project (or of `options.projectId`) holding `roles`, signed in to the console. */
export async function consoleMember(svc: TestService, roles: Role[], options: { name?: string; projectId?: string } = {}): Promise<ConsoleMember> {
  const projectId = options.projectId ?? svc.projectId;
  const principalId = newId('prn');
  const name = options.name ?? `person-${principalId.slice(4)}`;
  const password = randomBytes(12).toString('base64url');
  const at = new Date().toISOString();
  const password_hash = await hashPassword(password);
  await svc.ts.store.transaction(async (trx) => {
    await trx.insertInto('principals').values({ id: principalId, kind: 'person', name, password_hash, created_at: at, disabled_at: null }).execute();
    await trx.insertInto('memberships').values({ project_id: projectId, principal_id: principalId, created_at: at, created_by: null, revoked_at: null }).execute();
    for (const role of roles) {
      await trx.insertInto('role_grants').values({ project_id: projectId, principal_id: principalId, role, granted_at: at, granted_by: null }).execute();
    }
  });
  const s = await login(svc, name, password);
  return {
    principalId, name, password,
    get: { cookie: s.cookie },
    post: { cookie: s.cookie, 'x-csrf-token': s.csrf, 'content-type': 'application/json' },
  };
}

/**
 * Credentials for the routes that authenticate before they read the body (the policy document
 * routes, up to 8 MiB: decision 0153), so that a test of body refusals reaches the body there too;
 * no headers for every other route, which reads the body first (decision 0001). `bodyLimit` is the
 * route's own, as its OpenAPI body description states it ("Body limit: N bytes").
 */
export async function beforeBodyCredentials(svc: TestService): Promise<(path: string, bodyLimit: number) => Record<string, string>> {
  const key = await svc.keyHeader(['POLICY_AUTHOR']);
  const person = await consoleMember(svc, ['POLICY_AUTHOR']);
  const session = { cookie: person.post.cookie, 'x-csrf-token': person.post['x-csrf-token'] };
  return (path, bodyLimit) => (bodyLimit <= 64 * 1024 ? {} : path.startsWith('/v1/console/') ? session : key);
}

export interface AdminConsoleSuite {
  svc: TestService;
  /** A person holding ADMIN in the project, signed in to the console. */
  admin: ConsoleMember;
  /** The project's console routes: `/v1/console/projects/<project id>`. */
  P: string;
}

/**
 * Call inside a `describe`: one service on `backend` for all its tests, started by the suite's
 * `before` hook and stopped by its `after`, with an ADMIN signed in. The fields are set once
 * `before` has run, so read them inside tests and hooks, not at the suite's top level.
 */
export function adminConsoleSuite(backend: Backend): AdminConsoleSuite {
  const suite = {} as AdminConsoleSuite;
  before(async () => {
    suite.svc = await startService(backend);
    suite.P = `/v1/console/projects/${suite.svc.projectId}`;
    suite.admin = await consoleMember(suite.svc, ['ADMIN']);
  });
  after(async () => { await suite.svc.stop(); });
  return suite;
}
