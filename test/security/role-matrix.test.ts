// Every route, called by every kind of caller, against the table in role-matrix.data.ts:
// no credentials, a wrong key/session, a revoked key/ended session, a session without the CSRF
// token (or with another session's, or sent elsewhere than the header, or from another site), a
// non-member, a key of another project, a member (or key) without a role, and each single role.
// Any cell that differs fails. A second test fails for every OpenAPI route that has no entry.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { ROLES, type Role } from '../../src/domain/access/roles.ts';
import { hashPassword } from '../../src/lib/passwords.ts';
import { backends } from '../support/backends.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { startService, type TestService } from '../support/service.ts';
import { anotherProject } from '../support/projects.ts';
import { callRoute, matrixContext } from './matrix-context.ts';
import { PUBLIC_ROUTES, ROUTES, type MatrixContext, type RouteEntry, type RouteExample } from './role-matrix.data.ts';

const isAllowed = (e: RouteEntry, role: Role) => e.allowed === 'any' || e.allowed.includes(role);
const label = (e: RouteEntry) => `${e.method} ${e.path}`;

for (const backend of backends()) {
  describe(`role matrix (${backend.name})`, () => {
    let svc: TestService;
    let ctx: MatrixContext;
    const sessions = new Map<Role, ConsoleMember>();
    const keys = new Map<Role, string>();
    let outsider: ConsoleMember;
    /** A member holding no role, signed in, and a key of such a member. */
    let roleless: ConsoleMember;
    let rolelessKey: string;
    let ended: ConsoleMember;
    let revokedKey: string;
    /** A key of another project holding every role. */
    let foreignKey: string;
    let personPassword: string;

    before(async () => {
      svc = await startService(backend);
      personPassword = await hashPassword('matrix-person-password');
      ctx = matrixContext(svc, personPassword);
      for (const role of ROLES) {
        sessions.set(role, await consoleMember(svc, [role]));
        // Keys held by persons: the machine plane's resolve takes a person's key alone (invariant 6).
        keys.set(role, (await svc.member([role], undefined, 'person')).key);
      }
      // A signed-in person who is a member of no project.
      const p = await ctx.newPerson();
      const { login } = await import('../support/console.ts');
      const s = await login(svc, p.name, 'matrix-person-password');
      outsider = { principalId: p.principalId, name: p.name, password: '', get: { cookie: s.cookie }, post: { cookie: s.cookie, 'x-csrf-token': s.csrf, 'content-type': 'application/json' } };
      roleless = await consoleMember(svc, []);
      rolelessKey = (await svc.member([], undefined, 'person')).key;
      ended = await consoleMember(svc, ['ADMIN']);
      assert.equal((await svc.app.inject({ method: 'POST', url: '/v1/console/logout', headers: ended.post, payload: {} })).statusCode, 200);
      const r = await svc.member(['ADMIN']);
      revokedKey = r.key;
      foreignKey = (await anotherProject(svc.ts.store, ROLES)).secret;
      await svc.ts.store.transaction((trx) => trx.updateTable('api_keys').set({ revoked_at: new Date().toISOString(), revoked_by: 'test' }).where('id', '=', r.keyId).execute());
    });
    after(async () => { await svc?.stop(); });

    async function call(e: RouteEntry, headers: Record<string, string>, extraQuery?: string, example?: RouteExample) {
      const ex = example ?? (e.example ? await e.example(ctx) : {});
      return callRoute(svc, e, svc.projectId, ex, headers, extraQuery);
    }
    const consoleHeaders = (m: ConsoleMember, e: RouteEntry): Record<string, string> => (e.method === 'GET' ? { ...m.get } : { cookie: m.post.cookie, 'x-csrf-token': m.post['x-csrf-token'] });
    /** The member's cookies without its CSRF cookie, and with one holding `csrf` instead. */
    const noCsrfCookie = (m: ConsoleMember) => m.get.cookie.split('; ').filter((c) => !c.startsWith('gavel_csrf=')).join('; ');
    const sessionWithCsrf = (m: ConsoleMember, csrf: string) => `${noCsrfCookie(m)}; gavel_csrf=${csrf}`;

    for (const e of ROUTES) {
      test(label(e), async () => {
        const failures: string[] = [];
        const expect = (cell: string, res: { statusCode: number; body: string }, ok: (s: number, code: string) => boolean, want: string) => {
          let code = '';
          try { code = JSON.parse(res.body).code ?? ''; } catch { /* not JSON */ }
          if (!ok(res.statusCode, code)) failures.push(`${cell}: expected ${want}, got ${res.statusCode} ${code}`);
        };
        const is = (status: number, want: string) => (s: number, c: string) => s === status && c === want;
        const success = (s: number) => s >= 200 && s < 300;

        expect('no credentials', await call(e, {}), is(401, 'unauthorized'), '401 unauthorized');
        if (e.plane === 'machine') {
          expect('wrong key', await call(e, { authorization: `Bearer gvl_${randomBytes(32).toString('base64url')}` }), is(401, 'unauthorized'), '401 unauthorized');
          expect('malformed key', await call(e, { authorization: 'Bearer not-a-key' }), is(401, 'unauthorized'), '401 unauthorized');
          expect('revoked key', await call(e, { authorization: `Bearer ${revokedKey}` }), is(401, 'unauthorized'), '401 unauthorized');
          expect('session instead of key', await call(e, consoleHeaders(sessions.get('ADMIN')!, e)), is(401, 'unauthorized'), '401 unauthorized');
          if (e.path.includes('{projectId}')) expect('key of another project', await call(e, { authorization: `Bearer ${foreignKey}` }), is(403, 'forbidden'), '403 forbidden');
          // A key with no role (an ADMIN's platform credential) is any key: 2xx where any key may call.
          const bare = await call(e, { authorization: `Bearer ${rolelessKey}` });
          if (e.allowed === 'any') expect('key without a role', bare, success, '2xx');
          else expect('key without a role', bare, is(403, 'forbidden'), '403 forbidden');
          for (const role of ROLES) {
            const res = await call(e, { authorization: `Bearer ${keys.get(role)}` });
            if (isAllowed(e, role)) expect(`key ${role}`, res, success, '2xx');
            else expect(`key ${role}`, res, is(403, 'forbidden'), '403 forbidden');
          }
        } else {
          expect('wrong session', await call(e, { cookie: `gavel_session=${randomBytes(32).toString('base64url')}` }), is(401, 'unauthorized'), '401 unauthorized');
          expect('ended session', await call(e, consoleHeaders(ended, e)), is(401, 'unauthorized'), '401 unauthorized');
          expect('API key instead of session', await call(e, { authorization: `Bearer ${keys.get('ADMIN')}` }), is(401, 'unauthorized'), '401 unauthorized');
          if (e.method !== 'GET') {
            const admin = sessions.get('ADMIN')!;
            const own = admin.post['x-csrf-token'];
            const others = roleless.post['x-csrf-token'];
            const csrfFailed = is(403, 'csrf_failed');
            expect('session without CSRF token', await call(e, { cookie: admin.get.cookie }), csrfFailed, '403 csrf_failed');
            expect('another session\'s CSRF token', await call(e, { cookie: sessionWithCsrf(admin, others), 'x-csrf-token': others }), csrfFailed, '403 csrf_failed');
            expect('CSRF token in the cookie only', await call(e, { cookie: sessionWithCsrf(admin, own) }), csrfFailed, '403 csrf_failed');
            expect('CSRF token in the header only', await call(e, { cookie: noCsrfCookie(admin), 'x-csrf-token': own }), csrfFailed, '403 csrf_failed');
            expect('CSRF token in the query', await call(e, { cookie: sessionWithCsrf(admin, own) }, `x-csrf-token=${encodeURIComponent(own)}`), csrfFailed, '403 csrf_failed');
            expect('CSRF token from another site', await call(e, { ...consoleHeaders(admin, e), 'sec-fetch-site': 'cross-site' }), csrfFailed, '403 csrf_failed');
            expect('CSRF token from another origin', await call(e, { ...consoleHeaders(admin, e), origin: 'http://attacker.example' }), csrfFailed, '403 csrf_failed');
          }
          if (e.path.includes('{projectId}')) expect('non-member', await call(e, consoleHeaders(outsider, e)), is(403, 'forbidden'), '403 forbidden');
          // 'any' means any member (or signed-in person), one holding no role included.
          const bare = await call(e, consoleHeaders(e.endsSession ? await consoleMember(svc, []) : roleless, e));
          if (e.allowed === 'any') expect('member without a role', bare, success, '2xx');
          else if (e.path.includes('{projectId}')) expect('member without a role', bare, is(403, 'forbidden'), '403 forbidden');
          for (const role of ROLES) {
            const member = e.endsSession ? await consoleMember(svc, [role]) : sessions.get(role)!;
            const res = await call(e, consoleHeaders(member, e));
            if (isAllowed(e, role)) expect(`session ${role}`, res, success, '2xx');
            else expect(`session ${role}`, res, is(403, 'forbidden'), '403 forbidden');
          }
        }
        assert.deepEqual(failures, [], `${label(e)}:\n  ${failures.join('\n  ')}`);
      });
    }

    // "No GET changes state": every GET of the matrix, called by a caller it allows, leaves every
    // table as it was, but those that change beside it (a session's last use, heartbeats, the log's
    // tree and checkpoints; audit events are compared by id, as the sequencer numbers them meanwhile).
    test('no GET changes state: every table is as it was after each GET route is called', async () => {
      const BESIDE = ['sessions', 'execution_instances', 'audit_log_state', 'audit_nodes', 'audit_checkpoints', 'audit_witness_problem', 'sqlite_sequence'];
      const db = svc.ts.store.db;
      const tables = (svc.ts.store.dialect === 'sqlite'
        ? await sql<{ t: string }>`select name as t from sqlite_master where type = 'table'`.execute(db)
        : await sql<{ t: string }>`select table_name as t from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db))
        .rows.map((r) => r.t).filter((t) => !t.startsWith('kysely') && !BESIDE.includes(t)).sort();
      const contents = async () => {
        const out: Record<string, string> = {};
        for (const t of tables) {
          const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(t)}`.execute(db)).rows;
          out[t] = rows.map((r) => (t === 'audit_events' ? String(r.id) : JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)))).sort().join('\n');
        }
        return out;
      };
      const changed: string[] = [];
      for (const e of ROUTES.filter((r) => r.method === 'GET')) {
        const role: Role = e.allowed === 'any' ? 'ADMIN' : e.allowed[0]!;
        const headers = e.plane === 'machine' ? { authorization: `Bearer ${keys.get(role)}` } : consoleHeaders(sessions.get(role)!, e);
        const ex = e.example ? await e.example(ctx) : {};
        const before = await contents();
        const res = await call(e, headers, undefined, ex);
        assert.ok(res.statusCode >= 200 && res.statusCode < 300, `${label(e)}: ${res.statusCode} ${res.body}`);
        const after = await contents();
        for (const t of tables) if (before[t] !== after[t]) changed.push(`${label(e)} changed ${t}`);
      }
      assert.deepEqual(changed, []);
    });

    test('every route of the OpenAPI document has a matrix entry (or is public)', async () => {
      const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const covered = new Set([...ROUTES.map(label), ...PUBLIC_ROUTES]);
      const uncovered: string[] = [];
      for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
        for (const method of Object.keys(item)) {
          if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
          const key = `${method.toUpperCase()} ${path}`;
          if (!covered.has(key)) uncovered.push(key);
        }
      }
      assert.deepEqual(uncovered, [], `add an entry to test/security/role-matrix.data.ts for:\n  ${uncovered.join('\n  ')}`);
      const known = new Set(Object.entries<Record<string, unknown>>(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`)));
      const stale = ROUTES.map(label).filter((l) => !known.has(l));
      assert.deepEqual(stale, [], `matrix entries for routes that do not exist:\n  ${stale.join('\n  ')}`);
    });
  });
}
