// A permit's verified signatures are cached, its time never is (permit-cache.ts): a permit or a
// delegated link that expires, or whose not-before lies ahead after the wall clock steps back, is
// refused by the next decision although the process verified and cached it while it was valid.
// Both engines; the service's clock is stepped (docs/architecture.md, "The wall clock stepping").
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, decide, issue, newAgent } from '../support/authorize.ts';
import { delegatePermit } from '../../src/domain/permit/index.ts';

const READ = { actions: ['read'], resources: ['resource://docs/*'] };
const HOUR_MS = 3600_000;

for (const backend of backends()) {
  describe(`a cached permit's time is checked on every decision, on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    let step = 0;
    const at = (ms: number) => { step = ms; };
    const authorize = (agent: string, permit: string) => decide(svc, key, { agent, permit, action: 'read', resource: 'resource://docs/a' });

    before(async () => {
      svc = await startService(backend, {}, undefined, { clock: { now: () => new Date(Date.now() + step) } });
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
    });
    after(async () => { at(0); await svc.stop(); });

    test('a permit cached while valid is expired once the clock passes its exp', async () => {
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, READ, { ttlSeconds: 3600 });
      at(0);
      assert.equal((await authorize(agent.did, jws)).decision, 'ALLOW', 'verified and cached');
      assert.equal((await authorize(agent.did, jws)).decision, 'ALLOW', 'a cache hit');
      at(2 * HOUR_MS);
      const late = await authorize(agent.did, jws);
      assert.deepEqual([late.decision, late.reason_code, late.detail?.split(':')[0]], ['DENY', 'permit_invalid', 'expired']);
    });

    test('a delegated link that expires before its root ends the chain, though the chain is cached', async () => {
      const holder = newAgent();
      const child = newAgent();
      const root = await issue(svc, holder.did, READ, { ttlSeconds: 3 * 3600 });
      const iat = Math.floor(Date.now() / 1000);
      const chain = await delegatePermit(root.jws, { sub: child.did, jti: crypto.randomUUID(), iat, exp: iat + 3600, gavel: READ }, holder.sign);
      at(0);
      assert.equal((await authorize(child.did, chain)).decision, 'ALLOW', 'verified and cached');
      at(2 * HOUR_MS);
      const late = await authorize(child.did, chain);
      assert.deepEqual([late.decision, late.reason_code, late.detail?.split(':')[0]], ['DENY', 'permit_invalid', 'expired']);
      assert.equal((await authorize(holder.did, root.jws)).decision, 'ALLOW', 'the root is still valid');
    });

    test('a permit cached after its nbf is not yet valid again once the clock steps back before it', async () => {
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, READ, { ttlSeconds: 3 * 3600, notBefore: new Date(Date.now() + HOUR_MS) });
      at(2 * HOUR_MS);
      assert.equal((await authorize(agent.did, jws)).decision, 'ALLOW', 'verified and cached');
      at(0);
      const early = await authorize(agent.did, jws);
      assert.deepEqual([early.decision, early.reason_code, early.detail?.split(':')[0]], ['DENY', 'permit_invalid', 'not_yet_valid']);
    });
  });
}
