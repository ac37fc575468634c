// Decision 0301 under concurrency, on both engines: a tree of delegates (two children of the root,
// a grandchild under one of them) and the root's holder racing on one root budget. The root's budget
// admits exactly k spends in all, whoever spends; a child's own smaller budget is a sub-limit inside
// it; every link's counters show exactly what was allowed through it and the links below it.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, decide, delegate, issue, newAgent } from '../support/authorize.ts';
import { permitCommitment } from '../../src/domain/permit/index.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };
const eur = (minor: number) => ({ minor, currency: 'EUR' });

for (const backend of backends()) {
  describe(`delegates racing on their root's budget on ${backend.name}`, () => {
    let svc: TestService;
    before(async () => {
      svc = await startService(backend);
      await activatePolicy(svc, ALLOW_PAYMENTS);
    });
    after(async () => { await svc.stop(); });

    test('200 concurrent spends through a root, two children and a grandchild: k allowed in all, each link counting its subtree', async () => {
      const key = await svc.keyHeader([]);
      const k = 7;
      const [holder, small, big, grand] = [newAgent(), newAgent(), newAgent(), newAgent()];
      const root = await issue(svc, holder.did, { ...PAY, budget: eur(k * 100), max_uses: 1_000 });
      // A child's budget may be as large as its parent's (it is a sub-limit, not new money) or smaller.
      const toSmall = await delegate(root.jws, holder, small.did, { ...PAY, budget: eur(300), max_uses: 1_000 });
      const toBig = await delegate(root.jws, holder, big.did, { ...PAY, budget: eur(k * 100), max_uses: 1_000 });
      const toGrand = await delegate(toBig, big, grand.did, { ...PAY, budget: eur(k * 100), max_uses: 1_000 });
      const spenders = [[holder, root.jws], [small, toSmall], [big, toBig], [grand, toGrand]] as const;
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => {
        const [agent, permit] = spenders[i % 4]!;
        return decide(svc, key, { agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: eur(100) });
      }));
      const allowedBy = [0, 1, 2, 3].map((s) => results.filter((d, i) => i % 4 === s && d.decision === 'ALLOW').length);
      assert.equal(allowedBy.reduce((a, b) => a + b, 0), k, `allowed per spender: ${allowedBy}`);
      assert.ok(allowedBy[1]! <= 3, 'the smaller child never passes its own budget');
      for (const d of results.filter((r) => r.decision !== 'ALLOW')) {
        assert.deepEqual([d.decision, d.reason_code], ['DENY', 'permit_invalid']);
        assert.match(d.detail ?? '', /^budget_exhausted:/);
      }
      const counters = async (chain: string) => {
        const u = await svc.ts.store.db.selectFrom('permit_usage').select(['spent_minor', 'uses'])
          .where('commitment', '=', permitCommitment(chain.split('~').at(-1)!)).executeTakeFirst();
        return u ? [Number(u.spent_minor), Number(u.uses)] : [0, 0];
      };
      const [, bySmall, byBig, byGrand] = allowedBy as [number, number, number, number];
      assert.deepEqual(await counters(root.jws), [k * 100, k], 'the root counts every spend of its tree');
      assert.deepEqual(await counters(toSmall), [bySmall * 100, bySmall]);
      assert.deepEqual(await counters(toBig), [(byBig + byGrand) * 100, byBig + byGrand], 'a child counts its own and its delegate\'s spends');
      assert.deepEqual(await counters(toGrand), [byGrand * 100, byGrand]);
    });
  });
}
