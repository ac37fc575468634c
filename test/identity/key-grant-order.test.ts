// A role revoked and granted again must not reach the keys minted before the new grant (docs/identity.md,
// "API keys"), whatever the clocks of the instances that minted the key and made the grant say. Both
// used to be judged by wall-clock stamps: a grant stamped earlier than an old key (a clock stepped back,
// or an instance behind another on one database), or a key stamped late (minted after a grant stamped
// by an instance ahead), gave the old key the role back.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { Service } from '../../src/service.ts';
import type { Clock } from '../../src/lib/time.ts';
import { backends } from '../support/backends.ts';
import { adminConsoleSuite } from '../support/console.ts';
import { checkedService, type TestService } from '../support/service.ts';

const MINUTE = 60_000;
const offsetClock = (ms: number): Clock => ({ now: () => new Date(Date.now() + ms) });

for (const backend of backends()) {
  describe(`a key and its holder's grants are ordered by the database, not by clocks (${backend.name})`, () => {
    const suite = adminConsoleSuite(backend);

    const on = (s: Service | TestService) => ({
      post: (url: string, payload: unknown) => s.app.inject({ method: 'POST', url, headers: suite.admin.post, payload: JSON.stringify(payload) }),
      sod: async (secret: string) => (await s.app.inject({ method: 'GET', url: `/v1/projects/${suite.svc.projectId}/sod`, headers: { authorization: `Bearer ${secret}` } })).statusCode,
    });
    const grant = async (s: Service | TestService, holder: string) => {
      const res = await on(s).post(`${suite.P}/members/${holder}/roles`, { role: 'AUDITOR' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().changed, true);
    };
    const revoke = async (s: Service | TestService, holder: string) => {
      const res = await on(s).post(`${suite.P}/members/${holder}/roles/AUDITOR/revoke`, {});
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().changed, true);
    };
    const mint = async (s: Service | TestService, holder: string): Promise<{ id: string; secret: string }> => {
      const res = await on(s).post(`${suite.P}/api-keys`, { name: 'k', roles: ['AUDITOR'], principal_id: holder });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    const effective = async (keyId: string): Promise<string[]> => {
      const res = await suite.svc.app.inject({ method: 'GET', url: `${suite.P}/api-keys?limit=500`, headers: suite.admin.get });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().api_keys.find((k: { id: string }) => k.id === keyId).effective_roles;
    };

    test('a clock stepped back between a key and the re-grant of its role does not give the key the role back', async () => {
      const holder = (await suite.svc.member([])).principalId;
      await grant(suite.svc, holder);
      const old = await mint(suite.svc, holder);
      assert.equal(await on(suite.svc).sod(old.secret), 200);
      await revoke(suite.svc, holder);
      const saved = suite.svc.deps.clock;
      suite.svc.deps.clock = offsetClock(-5 * MINUTE);
      try {
        await grant(suite.svc, holder);
        assert.equal(await on(suite.svc).sod(old.secret), 403, 'the key minted before the new grant stays without the role');
        assert.deepEqual(await effective(old.id), [], 'and is listed without it');
        const fresh = await mint(suite.svc, holder);
        assert.equal(await on(suite.svc).sod(fresh.secret), 200, 'a key minted after the new grant carries it');
        assert.deepEqual(await effective(fresh.id), ['AUDITOR']);
      } finally { suite.svc.deps.clock = saved; }
    });

    test('a key minted after a grant stamped ahead still loses its role to a revoke and a re-grant', async () => {
      const holder = (await suite.svc.member([])).principalId;
      const saved = suite.svc.deps.clock;
      suite.svc.deps.clock = offsetClock(5 * MINUTE);
      try { await grant(suite.svc, holder); } finally { suite.svc.deps.clock = saved; }
      const old = await mint(suite.svc, holder);
      assert.equal(await on(suite.svc).sod(old.secret), 200, 'a grant stamped ahead reaches a key minted after it');
      await revoke(suite.svc, holder);
      await grant(suite.svc, holder);
      assert.equal(await on(suite.svc).sod(old.secret), 403, 'the re-grant, stamped by the right clock, does not reach the older key');
      assert.deepEqual(await effective(old.id), []);
    });

    test('instances on one database whose clocks disagree: a re-grant on the one behind does not reach an old key', async () => {
      // A second instance whose clock runs five minutes behind (PostgreSQL: its own connections).
      const behind = await checkedService(suite.svc.deps.config, {
        store: backend.name === 'postgres' ? suite.svc.ts.reopen() : suite.svc.ts.store, logger: false, clock: offsetClock(-5 * MINUTE),
      });
      try {
        const holder = (await suite.svc.member([])).principalId;
        await grant(behind, holder);
        const old = await mint(suite.svc, holder);
        const minted = await mint(behind, holder);
        for (const s of [suite.svc, behind]) for (const k of [old, minted]) assert.equal(await on(s).sod(k.secret), 200, 'both keys carry the role granted before them');
        await revoke(suite.svc, holder);
        await grant(behind, holder);
        for (const s of [suite.svc, behind]) {
          assert.equal(await on(s).sod(old.secret), 403, 'the key minted on the instance ahead stays without the role');
          assert.equal(await on(s).sod(minted.secret), 403, 'so does the one minted on the instance behind');
        }
        const fresh = await mint(suite.svc, holder);
        for (const s of [suite.svc, behind]) assert.equal(await on(s).sod(fresh.secret), 200, 'a key minted after the re-grant carries it');
      } finally { await behind.close(); }
    });
  });
}
