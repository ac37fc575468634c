// Console sessions and CSRF: fixation, logout, idle and absolute expiry, revoked members, CSRF
// token missing / wrong / from another session, cross-site requests, cookie attributes.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { SESSION_LIFETIMES } from '../../src/domain/access/session-lifetime.ts';
import { backends } from '../support/backends.ts';
import { consoleMember, login } from '../support/console.ts';
import { startService, type TestService } from '../support/service.ts';

for (const backend of backends()) {
  describe(`console sessions (${backend.name})`, () => {
    let svc: TestService;
    let offsetMs = 0;
    before(async () => {
      svc = await startService(backend);
      // The app reads the clock through deps on every request; shifting it simulates waiting.
      svc.deps.clock = { now: () => new Date(Date.now() + offsetMs) };
    });
    after(async () => { await svc.stop(); });
    const me = (cookie: string) => svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/me`, headers: { cookie } });
    /**
     * Runs `body` with the service's clock standing at `start` but for `offsetMs`, so an offset means
     * the same instant however long the requests in between take; the moving clock comes back after.
     */
    const onStandingClock = async (body: (start: number) => Promise<void>) => {
      const clock = svc.deps.clock;
      const start = Date.now();
      svc.deps.clock = { now: () => new Date(start + offsetMs) };
      try { await body(start); } finally { offsetMs = 0; svc.deps.clock = clock; }
    };

    test('login sets an HttpOnly SameSite=Strict session cookie and a readable CSRF cookie; only a hash is stored', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const res = await svc.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name: m.name, password: m.password } });
      assert.equal(res.statusCode, 200);
      const session = res.cookies.find((c) => c.name === 'gavel_session')!;
      const csrf = res.cookies.find((c) => c.name === 'gavel_csrf')!;
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Strict');
      assert.equal(session.path, '/');
      assert.notEqual(csrf.httpOnly, true);
      assert.equal(csrf.value, res.json().csrf_token);
      const stored = await svc.ts.store.db.selectFrom('sessions').selectAll().where('principal_id', '=', m.principalId).execute();
      assert.ok(stored.length >= 1);
      for (const s of stored) assert.notEqual(s.token_hash, session.value);
      assert.ok(!JSON.stringify(stored).includes(session.value), 'the token is not stored anywhere');
    });

    // A URL's scheme is case-insensitive (RFC 3986 3.1): HTTPS:// is TLS too, and was served plain.
    test('over TLS the cookies are __Host- prefixed and Secure, however GAVEL_PUBLIC_URL spells its scheme', async () => {
      for (const publicUrl of ['https://gavel.example', 'HTTPS://gavel.example']) {
        const tls = await startService(backend, { publicUrl });
        try {
          const name = 'tls-person';
          const { hashPassword } = await import('../../src/lib/passwords.ts');
          await tls.ts.store.db.insertInto('principals').values({ id: 'prn_01m8000000000000000000tls0', kind: 'person', name, password_hash: await hashPassword('correct horse battery'), created_at: new Date().toISOString(), disabled_at: null }).execute();
          const res = await tls.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name, password: 'correct horse battery' } });
          assert.equal(res.statusCode, 200);
          const session = res.cookies.find((c) => c.name === '__Host-gavel_session');
          assert.ok(session, `${publicUrl}: the session cookie is __Host- prefixed`);
          assert.equal(session.secure, true);
          assert.equal(session.httpOnly, true);
          assert.equal(session.sameSite, 'Strict');
          assert.equal(res.cookies.find((c) => c.name === '__Host-gavel_csrf')?.secure, true);
          assert.equal(res.cookies.find((c) => c.name === '__Host-gavel_device')?.secure, true);
        } finally {
          await tls.stop();
        }
      }
    });

    test('session fixation: a login issues a new session id and ends the session the browser carried', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const second = await svc.app.inject({ method: 'POST', url: '/v1/console/login', headers: { cookie: m.get.cookie }, payload: { name: m.name, password: m.password } });
      assert.equal(second.statusCode, 200);
      const newCookie = second.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
      assert.notEqual(newCookie, m.get.cookie);
      assert.equal((await me(m.get.cookie)).statusCode, 401, 'the old session is over');
      assert.equal((await me(newCookie)).statusCode, 200);
      // Ended by the new login, and audited as such, as a logout is.
      const events = await svc.ts.store.db.selectFrom('audit_events').select('data').where('kind', '=', 'session.ended').execute();
      const ends = events.map((e) => JSON.parse(e.data) as { principal_id: string; reason: string }).filter((d) => d.principal_id === m.principalId);
      assert.deepEqual(ends.map((d) => d.reason), ['replaced']);
      // A planted, unknown token is not adopted either: login always mints its own.
      const planted = 'gavel_session=' + 'A'.repeat(43);
      const third = await svc.app.inject({ method: 'POST', url: '/v1/console/login', headers: { cookie: planted }, payload: { name: m.name, password: m.password } });
      assert.notEqual(third.cookies.find((c) => c.name === 'gavel_session')!.value, 'A'.repeat(43));
    });

    test('logout ends the session at once and clears the cookies', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const out = await svc.app.inject({ method: 'POST', url: '/v1/console/logout', headers: m.post, payload: {} });
      assert.equal(out.statusCode, 200);
      assert.ok(out.cookies.some((c) => c.name === 'gavel_session' && c.value === ''));
      assert.equal((await me(m.get.cookie)).statusCode, 401);
      const again = await svc.app.inject({ method: 'POST', url: '/v1/console/logout', headers: m.post, payload: {} });
      assert.equal(again.statusCode, 401);
      const ended = await svc.ts.store.db.selectFrom('sessions').select(['ended_reason']).where('principal_id', '=', m.principalId).execute();
      assert.ok(ended.some((s) => s.ended_reason === 'logout'));
      // Signing in again from the same browser replaces no session: the one it carries is over already.
      const ends = async () => (await svc.ts.store.db.selectFrom('audit_events').select('data').where('kind', '=', 'session.ended').execute())
        .filter((e) => (JSON.parse(e.data) as { principal_id: string }).principal_id === m.principalId).length;
      const before = await ends();
      assert.equal((await svc.app.inject({ method: 'POST', url: '/v1/console/login', headers: { cookie: m.get.cookie }, payload: { name: m.name, password: m.password } })).statusCode, 200);
      assert.equal(await ends(), before, 'no second session.ended for a session that had ended');
      const reasons = await svc.ts.store.db.selectFrom('sessions').select('ended_reason').where('principal_id', '=', m.principalId).where('ended_at', 'is not', null).execute();
      assert.deepEqual(reasons.map((r) => r.ended_reason), ['logout']);
    });

    test('idle expiry: a session unused for the idle lifetime is over; use keeps it alive', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      offsetMs = SESSION_LIFETIMES.idleMs - 60_000;
      assert.equal((await me(m.get.cookie)).statusCode, 200, 'still inside the idle window');
      offsetMs += SESSION_LIFETIMES.idleMs - 60_000;
      assert.equal((await me(m.get.cookie)).statusCode, 200, 'the last request refreshed it');
      offsetMs += SESSION_LIFETIMES.idleMs + 1000;
      assert.equal((await me(m.get.cookie)).statusCode, 401, 'idle too long');
      offsetMs = 0;
    });

    test('/me names both ends of the session: the absolute one and the one idleness would bring, never after it', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const first = (await me(m.get.cookie)).json().session;
      const stored = await svc.ts.store.db.selectFrom('sessions').select(['last_seen_at', 'expires_at']).where('id', '=', first.id).executeTakeFirstOrThrow();
      assert.equal(first.expires_at, stored.expires_at);
      assert.equal(Date.parse(first.idle_expires_at), Date.parse(stored.last_seen_at) + SESSION_LIFETIMES.idleMs);
      // A request after a while moves the idle end, not the absolute one.
      offsetMs = SESSION_LIFETIMES.idleMs - 60_000;
      const later = (await me(m.get.cookie)).json().session;
      assert.equal(later.expires_at, first.expires_at);
      assert.ok(Date.parse(later.idle_expires_at) >= Date.parse(first.idle_expires_at) + SESSION_LIFETIMES.idleMs - 60_000 - 1000);
      // Near the absolute end the idle end is the absolute one.
      offsetMs = SESSION_LIFETIMES.absoluteMs - 120_000;
      await svc.ts.store.db.updateTable('sessions').set({ last_seen_at: new Date(Date.now() + offsetMs).toISOString() }).where('id', '=', first.id).execute();
      assert.equal((await me(m.get.cookie)).json().session.idle_expires_at, first.expires_at);
      offsetMs = 0;
    });

    test('a wall clock stepped back: an idle session ends after its idle lifetime, not after the step and its idle lifetime', async () => {
      // The session is used at `start`, then the clock steps back two hours (an NTP correction) and
      // nobody uses it. Read as stored, its last use lies in the future and it lived two and a half hours.
      await onStandingClock(async (start) => {
        const m = await consoleMember(svc, ['AUDITOR']);
        assert.equal((await me(m.get.cookie)).statusCode, 200);
        offsetMs = -2 * 3600_000 + SESSION_LIFETIMES.idleMs + 60_000;
        assert.equal((await me(m.get.cookie)).statusCode, 401, 'idle longer than its lifetime since the step');
        // A step back shorter than the idle lifetime keeps a session in use alive, and its idle clock restarts at the present.
        offsetMs = 0;
        const n = await consoleMember(svc, ['AUDITOR']);
        offsetMs = -10 * 60_000;
        const stepped = await me(n.get.cookie);
        assert.equal(stepped.statusCode, 200, 'a ten-minute step back');
        assert.equal(stepped.json().session.idle_expires_at, new Date(start - 10 * 60_000 + SESSION_LIFETIMES.idleMs).toISOString());
        offsetMs = -10 * 60_000 + SESSION_LIFETIMES.idleMs - 60_000;
        assert.equal((await me(n.get.cookie)).statusCode, 200, 'used within its idle lifetime of the last request');
      });
    });

    test('absolute expiry: even a busy session ends after the absolute lifetime', async () => {
      // The clock stands still but for the offsets: a second before the lifetime ends must be a
      // second before it however long the requests in between took on a loaded machine.
      await onStandingClock(async () => {
        const m = await consoleMember(svc, ['AUDITOR']);
        const step = SESSION_LIFETIMES.idleMs - 60_000;
        for (offsetMs = step; offsetMs < SESSION_LIFETIMES.absoluteMs - 1000; offsetMs += step) {
          assert.equal((await me(m.get.cookie)).statusCode, 200);
        }
        offsetMs = SESSION_LIFETIMES.absoluteMs - 1000;
        assert.equal((await me(m.get.cookie)).statusCode, 200, 'a second before the absolute lifetime');
        // Two seconds after the last request: the absolute lifetime ends it, not idleness.
        offsetMs = SESSION_LIFETIMES.absoluteMs + 1000;
        assert.equal((await me(m.get.cookie)).statusCode, 401);
      });
    });

    test('a revoked member loses access at once: sessions ended, keys revoked', async () => {
      const admin = await consoleMember(svc, ['ADMIN']);
      const m = await consoleMember(svc, ['AUDITOR']);
      const key = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/api-keys`, headers: admin.post, payload: { name: 'k', roles: ['AUDITOR'], principal_id: m.principalId } });
      assert.equal(key.statusCode, 201);
      const sod = () => svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/sod`, headers: { authorization: `Bearer ${key.json().secret}` } });
      assert.equal((await sod()).statusCode, 200);
      const rev = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/members/${m.principalId}/revoke`, headers: admin.post, payload: {} });
      assert.equal(rev.statusCode, 200);
      assert.equal(rev.json().sessions_ended, 1);
      assert.equal((await me(m.get.cookie)).statusCode, 401);
      assert.equal((await sod()).statusCode, 401);
      // Re-adding the member does not revive the old key or roles.
      const back = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/members`, headers: admin.post, payload: { principal_id: m.principalId } });
      assert.equal(back.statusCode, 201);
      assert.deepEqual(back.json().roles, []);
      assert.equal((await sod()).statusCode, 401);
      // Removed again, the person may still sign in (login knows no project), but not into this project.
      assert.equal((await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/members/${m.principalId}/revoke`, headers: admin.post, payload: {} })).statusCode, 200);
      const again = await login(svc, m.name, m.password);
      for (const view of ['me', 'dashboard']) {
        const res = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/${view}`, headers: { cookie: again.cookie } });
        assert.equal(res.statusCode, 403, `${view}: ${res.body}`);
      }
      const forFormer = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/api-keys`, headers: admin.post, payload: { name: 'k', roles: [], principal_id: m.principalId } });
      assert.equal(forFormer.statusCode, 422, 'no key for a former member');
      assert.equal(forFormer.json().code, 'not_a_member');
    });

    test('CSRF: missing, wrong, or minted for another session is refused before any effect', async () => {
      const admin = await consoleMember(svc, ['ADMIN']);
      const other = await consoleMember(svc, ['ADMIN']);
      const target = await svc.member(['APPROVER']);
      const url = `/v1/console/projects/${svc.projectId}/members/${target.principalId}/roles`;
      const attempt = (headers: Record<string, string>) => svc.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: { role: 'AUDITOR' } });
      const cases: [string, Record<string, string>][] = [
        ['missing', { cookie: admin.get.cookie }],
        ['wrong', { cookie: admin.get.cookie, 'x-csrf-token': 'A'.repeat(22) + '.' + 'B'.repeat(43) }],
        ['garbage', { cookie: admin.get.cookie, 'x-csrf-token': 'nope' }],
        // The other session's token, sent with that token as the CSRF cookie too (double submit alone would pass).
        ['from another session', { cookie: `${admin.get.cookie.split('; ')[0]}; gavel_csrf=${other.post['x-csrf-token']}`, 'x-csrf-token': other.post['x-csrf-token'] }],
        ['header without matching cookie', { cookie: admin.get.cookie.split('; ')[0]!, 'x-csrf-token': admin.post['x-csrf-token'] }],
        ['cross-site fetch', { ...admin.post, 'sec-fetch-site': 'cross-site' }],
        // A sibling subdomain is same-site, not same-origin: it may plant cookies, so it is refused too.
        ['same-site fetch', { ...admin.post, 'sec-fetch-site': 'same-site' }],
        ['foreign origin', { ...admin.post, origin: 'https://evil.example' }],
        // DNS rebinding: a page whose domain points at this machine is same-origin with itself, not with the service.
        ['a domain without GAVEL_PUBLIC_URL', { ...admin.post, host: 'evil.example:7400', origin: 'http://evil.example:7400' }],
      ];
      for (const [name, headers] of cases) {
        const res = await attempt(headers);
        assert.equal(res.statusCode, 403, name);
        assert.equal(res.json().code, 'csrf_failed', name);
      }
      const grants = await svc.ts.store.db.selectFrom('role_grants').select('role').where('principal_id', '=', target.principalId).execute();
      assert.deepEqual(grants.map((g) => g.role), ['APPROVER'], 'nothing changed');
      const ok = await attempt({ ...admin.post, 'sec-fetch-site': 'same-origin', origin: 'http://localhost:80' });
      assert.equal(ok.statusCode, 200, 'same-origin with the right token passes');
      // An address is this machine's own name, whatever it is: 192.0.2.7 reached directly.
      const byAddress = await attempt({ ...admin.post, host: '192.0.2.7:7400', origin: 'http://192.0.2.7:7400' });
      assert.equal(byAddress.statusCode, 200, byAddress.body);
      // A rebinding page cannot sign in either (login checks the origin too).
      const rebound = await svc.app.inject({ method: 'POST', url: '/v1/console/login', headers: { host: 'evil.example:7400', origin: 'http://evil.example:7400' }, payload: { name: 'nobody', password: 'whatever it is' } });
      assert.equal(rebound.json().code, 'csrf_failed', rebound.body);
      // Nor can another site register someone (login CSRF's twin): refused before anything is created.
      const name = `cross-site-${Date.now()}`;
      const foreign = await svc.app.inject({ method: 'POST', url: '/v1/console/register', headers: { 'sec-fetch-site': 'cross-site' }, payload: { name, password: 'a long enough passphrase' } });
      assert.equal(foreign.json().code, 'csrf_failed', foreign.body);
      assert.equal(await svc.ts.store.db.selectFrom('principals').select('id').where('name', '=', name).executeTakeFirst(), undefined);
    });

    test('a session or CSRF cookie sent twice is refused, whichever comes first: a planted session is never taken for the victim\'s', async () => {
      const victim = await consoleMember(svc, ['ADMIN']);
      const attacker = await consoleMember(svc, []);
      const target = await svc.member(['APPROVER']);
      const cookie = (c: string, name: string) => c.split('; ').find((p) => p.startsWith(`${name}=`))!;
      const grant = (headers: Record<string, string>) => svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/members/${target.principalId}/roles`, headers: { 'content-type': 'application/json', ...headers }, payload: { role: 'AUDITOR' } });
      // A cookie set with a longer Path by a page elsewhere on the host comes first in the header.
      const planted = `${cookie(attacker.get.cookie, 'gavel_session')}; ${cookie(attacker.get.cookie, 'gavel_csrf')}; ${victim.get.cookie}`;
      const projects = await svc.app.inject({ method: 'GET', url: '/v1/console/projects', headers: { cookie: planted } });
      assert.equal(projects.statusCode, 401, 'not answered as the attacker');
      assert.match(projects.json().detail, /gavel_session cookie more than once/);
      const asAttacker = await svc.app.inject({ method: 'POST', url: '/v1/console/logout', headers: { cookie: planted, 'x-csrf-token': attacker.post['x-csrf-token'], 'content-type': 'application/json' }, payload: {} });
      assert.equal(asAttacker.statusCode, 401);
      const victimFirst = `${victim.get.cookie}; ${cookie(attacker.get.cookie, 'gavel_session')}`;
      assert.equal((await me(victimFirst)).statusCode, 401, 'not the victim either: which one is meant cannot be told');
      // Two Cookie lines are one header (joined with "; "), so the repeat is seen there too.
      const twoLines = await svc.app.inject({ method: 'GET', url: '/v1/console/projects', headers: { cookie: [cookie(attacker.get.cookie, 'gavel_session'), victim.get.cookie] } });
      assert.equal(twoLines.statusCode, 401);
      // The CSRF cookie twice: refused before any effect, even with the right token first.
      const twoCsrf = await grant({ ...victim.post, cookie: `${victim.get.cookie}; ${cookie(attacker.get.cookie, 'gavel_csrf')}` });
      assert.equal(twoCsrf.statusCode, 403);
      assert.equal(twoCsrf.json().code, 'csrf_failed');
      assert.deepEqual((await svc.ts.store.db.selectFrom('role_grants').select('role').where('principal_id', '=', target.principalId).execute()).map((g) => g.role), ['APPROVER'], 'nothing changed');
      // Each cookie once, spaced as a browser may send them, still works.
      assert.equal((await grant({ ...victim.post, cookie: victim.get.cookie.replace('; ', ' ;  ') })).statusCode, 200);
      // Signing in again ends every session the browser carried, the planted one included.
      const again = await svc.app.inject({ method: 'POST', url: '/v1/console/login', headers: { cookie: planted }, payload: { name: victim.name, password: victim.password } });
      assert.equal(again.statusCode, 200);
      assert.equal((await me(victim.get.cookie)).statusCode, 401, 'the victim\'s previous session is over');
      assert.equal((await svc.app.inject({ method: 'GET', url: '/v1/console/projects', headers: { cookie: attacker.get.cookie } })).statusCode, 401, 'the planted session is over');
    });

    test('GET never needs the CSRF token and changes nothing', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const before = await svc.ts.store.db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      assert.equal((await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/members`, headers: m.get })).statusCode, 200);
      const after = await svc.ts.store.db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(after.n), Number(before.n));
    });

    test('the login helper returns a cookie header and a token', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const s = await login(svc, m.name, m.password);
      assert.match(s.cookie, /gavel_session=/);
      assert.match(s.csrf, /^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    });
  });
}
