// Device cookies against account-lockout denial of service (decision 0203, addendum 2): an attacker
// who keeps an account locked does not lock out the browsers its owner signed in from before; a
// fresh client, a known device that guesses, and any cookie not minted for that account are
// throttled as before.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DEVICE_COOKIE_LIFETIME_MS } from '../../src/services/identity/device-cookie.ts';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { startService, type TestService } from '../support/service.ts';

const DAY = 24 * 3600_000;

for (const backend of backends()) {
  describe(`login device cookies (${backend.name})`, () => {
    let svc: TestService;
    let offsetMs = 0;
    let attacker = 0;
    before(async () => {
      svc = await startService(backend);
      svc.deps.clock = { now: () => new Date(Date.now() + offsetMs) };
    });
    after(async () => { await svc.stop(); });

    const signIn = (name: string, password: string, ip: string, device?: string) => svc.app.inject({
      method: 'POST', url: '/v1/console/login', remoteAddress: ip, payload: { name, password },
      ...(device === undefined ? {} : { headers: { cookie: `gavel_device=${device}` } }),
    });
    /** The device cookie a browser gets by signing in (asserting that it did). */
    const knownDevice = async (name: string, password: string, ip = '198.51.100.10') => {
      const res = await signIn(name, password, ip);
      assert.equal(res.statusCode, 200, res.body);
      const cookie = res.cookies.find((c) => c.name === 'gavel_device');
      assert.ok(cookie, 'login sets a device cookie');
      return cookie.value;
    };
    /** An attacker at its own address guesses until the account is locked; a fresh client then gets 429. */
    const lockOut = async (name: string, password: string) => {
      const ip = `203.0.113.${++attacker}`;
      for (let i = 0; i < 5; i++) assert.equal((await signIn(name, `attacker guess ${i}`, ip)).statusCode, 401);
      assert.equal((await signIn(name, 'attacker guess 6', ip)).statusCode, 429);
      assert.equal((await signIn(name, password, '192.0.2.200')).statusCode, 429, 'a fresh client is locked out, right password or not');
    };
    const row = (key: string) => svc.ts.store.db.selectFrom('login_throttle').selectAll().where('key', '=', key).executeTakeFirst();

    test('an attacker keeping `admin` locked does not stop the browser admin signed in from before; a fresh client still waits', async () => {
      const { name, password } = svc.bootstrap.admin!;
      assert.equal(name, 'admin');
      const device = await knownDevice(name, password);
      // A sustained attack: each time the lock lapses the attacker locks the account again.
      for (let round = 0; round < 3; round++) {
        offsetMs += 16 * 60_000;
        await lockOut(name, password);
        const own = await signIn(name, password, '198.51.100.10', device);
        assert.equal(own.statusCode, 200, `round ${round}: ${own.body}`);
        assert.notEqual(own.cookies.find((c) => c.name === 'gavel_device')?.value, device, 'a new device nonce at every sign-in');
        // The success on the device leaves the account's lock as the attacker left it.
        assert.ok((await row('account:admin'))?.locked_until, 'the account stays locked for everyone else');
        assert.equal((await signIn(name, password, '192.0.2.201')).statusCode, 429, 'a fresh client without the cookie is still 429');
      }
      offsetMs = 0;
    });

    test('a failure with a device cookie counts on the device, not the account; a device that fails 5 times locks itself', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const device = await knownDevice(m.name, m.password);
      for (let i = 0; i < 4; i++) assert.equal((await signIn(m.name, `typo ${i}`, '198.51.100.11', device)).statusCode, 401);
      assert.equal(await row(`account:${m.name}`), undefined, 'the account counted nothing');
      // While someone else keeps the account locked, the device has its own five.
      await lockOut(m.name, m.password);
      assert.equal((await signIn(m.name, 'typo 4', '198.51.100.11', device)).statusCode, 401, 'the 5th failure is the device\'s');
      const locked = await signIn(m.name, m.password, '198.51.100.11', device);
      assert.equal(locked.statusCode, 429, 'a locked device falls back to the (locked) account: even the right password waits');
      assert.equal(locked.json().code, 'too_many_attempts');
      const counted = await svc.ts.store.db.selectFrom('login_throttle').selectAll().where('key', 'like', 'device:%').where('failures', '=', 5).execute();
      assert.ok(counted.some((r) => r.locked_until), 'the device is locked');
    });

    test('a locked device takes the account\'s path like any client: while the account is not locked, the right password passes', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const device = await knownDevice(m.name, m.password);
      for (let i = 0; i < 5; i++) assert.equal((await signIn(m.name, `typo ${i}`, '198.51.100.17', device)).statusCode, 401);
      assert.equal(await row(`account:${m.name}`), undefined, 'the device counted them all');
      const res = await signIn(m.name, m.password, '198.51.100.17', device);
      assert.equal(res.statusCode, 200, res.body);
      assert.ok((await row(`account:${m.name}`)) === undefined, 'the account\'s success clears its own counter');
    });

    test('every device cookie the request carries is tried: a planted one before or after the genuine one takes nothing away', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const device = await knownDevice(m.name, m.password);
      await lockOut(m.name, m.password);
      const planted = `${'A'.repeat(22)}.${Math.floor(Date.now() / 1000)}.${'A'.repeat(43)}`;
      for (const cookies of [`${planted}; gavel_device=${device}`, `${device}; gavel_device=${planted}`]) {
        const res = await signIn(m.name, m.password, '198.51.100.19', cookies);
        assert.equal(res.statusCode, 200, `${cookies.slice(0, 40)}: ${res.body}`);
      }
    });

    test('a success on a known device gives the address back the lock its own attempt set', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const device = await knownDevice(m.name, m.password);
      const ip = '192.0.2.152';
      for (let i = 0; i < 50; i++) await signIn(`spray-b-${i}`, 'guess guess guess', ip);
      assert.equal((await signIn(m.name, m.password, ip, device)).statusCode, 429, 'the address is locked for everyone');
      offsetMs += 31_000;
      // The 51st attempt locks the address again (for longer); its success on the device takes that lock back.
      assert.equal((await signIn(m.name, m.password, ip, device)).statusCode, 200);
      const next = await signIn('spray-b-next', 'guess guess guess', ip);
      assert.equal(next.statusCode, 401, `the address is not left locked by a right password: ${next.body}`);
      offsetMs = 0;
    });

    test('concurrent guesses on a device cookie are counted before any password is checked', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const device = await knownDevice(m.name, m.password);
      await lockOut(m.name, m.password);
      const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => signIn(m.name, `wrong guess ${i}`, '198.51.100.12', device)));
      const checked = burst.filter((r) => r.statusCode !== 429);
      assert.ok(checked.length >= 1 && checked.length <= 5, `${checked.length} attempts were checked: ${burst.map((r) => r.statusCode).join(' ')}`);
      assert.equal((await signIn(m.name, m.password, '198.51.100.12', device)).statusCode, 429);
    });

    test('a forged or tampered cookie gives no exemption', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const device = await knownDevice(m.name, m.password);
      await lockOut(m.name, m.password);
      const [nonce, issued, mac] = device.split('.') as [string, string, string];
      const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
      const forged = [
        `${flip(nonce)}.${issued}.${mac}`, `${nonce}.${Number(issued) + 1}.${mac}`, `${nonce}.${issued}.${flip(mac)}`,
        `${'A'.repeat(22)}.${issued}.${'A'.repeat(43)}`, `${device}x`, device.replaceAll('.', ','), '', '%ff', 'a'.repeat(4000),
      ];
      for (const cookie of forged) {
        const res = await signIn(m.name, m.password, '198.51.100.13', cookie);
        assert.equal(res.statusCode, 429, `${cookie.slice(0, 80)}: ${res.body}`);
      }
      assert.equal((await signIn(m.name, m.password, '198.51.100.13', device)).statusCode, 200, 'the genuine cookie passes');
    });

    test('another account\'s device cookie gives no exemption', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const other = await consoleMember(svc, ['AUDITOR']);
      const mine = await knownDevice(m.name, m.password);
      const theirs = await knownDevice(other.name, other.password, '198.51.100.14');
      await lockOut(m.name, m.password);
      assert.equal((await signIn(m.name, m.password, '198.51.100.14', theirs)).statusCode, 429);
      // Names are compared normalized: the cookie of `x` works for ` X `, never for another name.
      assert.equal((await signIn(` ${m.name.toUpperCase()} `, m.password, '198.51.100.10', mine)).statusCode, 200);
    });

    test('an expired device cookie gives no exemption', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const device = await knownDevice(m.name, m.password);
      offsetMs = DEVICE_COOKIE_LIFETIME_MS - DAY;
      await lockOut(m.name, m.password);
      assert.equal((await signIn(m.name, m.password, '198.51.100.15', device)).statusCode, 200, 'a day before it expires, it still passes');
      offsetMs = DEVICE_COOKIE_LIFETIME_MS + DAY;
      await lockOut(m.name, m.password);
      assert.equal((await signIn(m.name, m.password, '198.51.100.15', device)).statusCode, 429, 'past its lifetime it is any client');
      offsetMs = 0;
    });

    test('the address throttle still applies to a known device (password spraying)', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const device = await knownDevice(m.name, m.password);
      await lockOut(m.name, m.password);
      const ip = '192.0.2.150';
      for (let i = 0; i < 50; i++) await signIn(`spray-${i}`, 'guess guess guess', ip);
      assert.equal((await signIn(m.name, m.password, ip, device)).statusCode, 429);
      assert.equal((await signIn(m.name, m.password, '198.51.100.16', device)).statusCode, 200, 'from another address the device passes the account\'s lock');
    });

    test('the device cookie: HttpOnly, SameSite=Strict, Path=/, 180 days; __Host- and Secure over TLS; binds no readable name', async () => {
      const m = await consoleMember(svc, ['AUDITOR']);
      const res = await signIn(m.name, m.password, '198.51.100.17');
      const cookie = res.cookies.find((c) => c.name === 'gavel_device')!;
      assert.ok(cookie);
      assert.equal(cookie.httpOnly, true);
      assert.equal(cookie.sameSite, 'Strict');
      assert.equal(cookie.path, '/');
      assert.equal(cookie.maxAge, 180 * 24 * 3600);
      assert.notEqual(cookie.secure, true, 'plain-HTTP loopback: the documented development exception');
      assert.equal(cookie.domain, undefined);
      assert.ok(!cookie.value.includes(m.name) && !cookie.value.includes(m.principalId));
      // Logout leaves it: it says the browser signed in before, not that it is signed in.
      const out = await svc.app.inject({ method: 'POST', url: '/v1/console/logout', headers: m.post, payload: {} });
      assert.equal(out.statusCode, 200);
      assert.ok(!out.cookies.some((c) => c.name === 'gavel_device'));
      // The project's settings name it beside the other cookies, with its lifetime and its own limit.
      const settings = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/settings`, headers: (await consoleMember(svc, ['AUDITOR'])).get });
      assert.equal(settings.statusCode, 200, settings.body);
      const { sessions, login_throttle } = settings.json();
      assert.deepEqual([sessions.device_cookie, sessions.device_cookie_max_age_seconds, login_throttle.device_failures_before_lock], ['gavel_device', 180 * 24 * 3600, 5]);
      // Self-registration's own limit, per address, beside the login's.
      assert.deepEqual(settings.json().registration_throttle, { registrations_per_address: 60, window_seconds: 900, max_lock_seconds: 900 });

      const tls = await startService(backend, { publicUrl: 'https://gavel.example' });
      try {
        const admin = tls.bootstrap.admin!;
        const over = await tls.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name: admin.name, password: admin.password } });
        assert.equal(over.statusCode, 200);
        const secure = over.cookies.find((c) => c.name === '__Host-gavel_device');
        assert.ok(secure, 'the device cookie is __Host- prefixed over TLS');
        assert.equal(secure.secure, true);
        assert.equal(secure.httpOnly, true);
        assert.equal(secure.sameSite, 'Strict');
        assert.equal(secure.path, '/');
        assert.equal(secure.domain, undefined);
      } finally { await tls.stop(); }
    });
  });
}
