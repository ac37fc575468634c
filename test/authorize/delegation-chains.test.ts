// Delegation chains end to end, on both engines.
// - Decision 0301 under concurrency: a tree of delegates (two children of the root, a grandchild
//   under one of them) and the root's holder racing on one root budget. The root's budget admits
//   exactly k spends in all, whoever spends; a child's own smaller budget is a sub-limit inside it;
//   every link's counters show exactly what was allowed through it and the links below it. The
//   holder and the big child ask few times, so the grandchild (through the big child) surely spends.
// - A middle link's budget and use count bind the delegates below it (depth 2), one after another.
// - A link wider than its own parent but no wider than the root. Coverage checks every link
//   (decision 0302), so such a link widens nothing a request could use; it is still refused by name
//   (decision 0301: each link within its parent), for a request every link covers.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, decide, delegate, issue, newAgent } from '../support/authorize.ts';
import { permitCommitment, signPermitClaims, type GavelConstraints, type PermitClaims } from '../../src/domain/permit/index.ts';

const PAY = { actions: ['pay'], resources: ['resource://shop/*'] };
const eur = (minor: number) => ({ minor, currency: 'EUR' });
const ROOT = { actions: ['pay', 'read'], resources: ['resource://shop/*'], max_per_request: eur(1_000), budget: eur(5_000), max_uses: 10 };
const MIDDLE = { actions: ['pay'], resources: ['resource://shop/a/*'], max_per_request: eur(500), budget: eur(2_000), max_uses: 5 };
const claimsOf = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[1]!, 'base64url').toString('utf8')) as PermitClaims;

for (const backend of backends()) {
  describe(`delegation chains on ${backend.name}`, () => {
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
      const toBig = await delegate(root.jws, holder, big.did, { ...PAY, budget: eur(400), max_uses: 1_000 });
      const toGrand = await delegate(toBig, big, grand.did, { ...PAY, budget: eur(400), max_uses: 1_000 });
      const spenders = [[holder, root.jws], [small, toSmall], [big, toBig], [grand, toGrand]] as const;
      // Each chain verified (and cached) first by a request out of its scope, which spends nothing:
      // else the grandchild's longer chain is still verifying while the others spend the root out.
      for (const [agent, permit] of spenders) {
        const warm = await decide(svc, key, { agent: agent.did, permit, action: 'pay', resource: 'resource://elsewhere/1', amount: eur(100) });
        assert.equal(warm.decision, 'DENY');
      }
      // The holder asks twice and the big child once, so the grandchild surely spends, whatever the
      // order: the others can take at most 2 + 1 + 3 of the root's k.
      const plan = Array.from({ length: 200 }, (_, i) => i % 100 === 0 ? 0 : i === 51 ? 2 : i % 2 ? 1 : 3);
      const results = await Promise.all(plan.map((s) => {
        const [agent, permit] = spenders[s]!;
        return decide(svc, key, { agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: eur(100) });
      }));
      const allowedBy = [0, 1, 2, 3].map((s) => results.filter((d, i) => plan[i] === s && d.decision === 'ALLOW').length);
      const [byHolder, bySmall, byBig, byGrand] = allowedBy as [number, number, number, number];
      assert.equal(byHolder + bySmall + byBig + byGrand, k, `allowed per spender: ${allowedBy}`);
      assert.ok(bySmall <= 3, `the smaller child never passes its own budget: ${allowedBy}`);
      assert.ok(byBig + byGrand <= 4, `the big child's budget binds its delegate's spends too: ${allowedBy}`);
      assert.ok(byGrand >= k - 2 - 1 - 3, `the grandchild spent in the race: ${allowedBy}`);
      for (const d of results.filter((r) => r.decision !== 'ALLOW')) {
        assert.deepEqual([d.decision, d.reason_code], ['DENY', 'permit_invalid']);
        assert.match(d.detail ?? '', /^budget_exhausted:/);
      }
      const counters = async (chain: string) => {
        const u = await svc.ts.store.db.selectFrom('permit_usage').select(['spent_minor', 'uses'])
          .where('commitment', '=', permitCommitment(chain.split('~').at(-1)!)).executeTakeFirst();
        return u ? [Number(u.spent_minor), Number(u.uses)] : [0, 0];
      };
      assert.deepEqual(await counters(root.jws), [k * 100, k], 'the root counts every spend of its tree');
      assert.deepEqual(await counters(toSmall), [bySmall * 100, bySmall]);
      assert.deepEqual(await counters(toBig), [(byBig + byGrand) * 100, byBig + byGrand], 'a child counts its own and its delegate\'s spends');
      assert.deepEqual(await counters(toGrand), [byGrand * 100, byGrand]);
    });

    test('a middle link\'s budget and use count bind every delegate below it: two grandchildren given its whole limit share it', async () => {
      // Depth 2: were a middle link's counters spent only by its own holder, it could hand its whole
      // budget to each of several delegates and multiply it (decision 0301). Sequential, so each
      // grandchild surely spends: the second finds the middle link spent out.
      const key = await svc.keyHeader([]);
      const [holder, middle, a, b] = [newAgent(), newAgent(), newAgent(), newAgent()];
      const root = await issue(svc, holder.did, { ...PAY, budget: eur(10_000), max_uses: 100 });
      const usage = async (jws: string) => {
        const u = await svc.ts.store.db.selectFrom('permit_usage').select(['spent_minor', 'uses']).where('commitment', '=', permitCommitment(jws)).executeTakeFirst();
        return u ? [Number(u.spent_minor), Number(u.uses)] : [0, 0];
      };
      // Each link carries both limits (a child keeps every limit of its parent); one of them is tight.
      for (const [limit, check] of [[{ budget: eur(300), max_uses: 100 }, 'budget_exhausted'], [{ budget: eur(10_000), max_uses: 1 }, 'uses_exhausted']] as const) {
        const toMiddle = await delegate(root.jws, holder, middle.did, { ...PAY, ...limit });
        const [toA, toB] = await Promise.all([a, b].map((g) => delegate(toMiddle, middle, g.did, { ...PAY, ...limit })));
        const pay = (agent: string, permit: string) => decide(svc, key, { agent, permit, action: 'pay', resource: 'resource://shop/1', amount: eur(200) });
        assert.equal((await pay(a.did, toA!)).decision, 'ALLOW', check);
        const second = await pay(b.did, toB!);
        assert.deepEqual([second.decision, second.reason_code, second.detail?.split(':')[0]], ['DENY', 'permit_invalid', check]);
        assert.match(second.detail ?? '', /delegation link 1 of the permit/, 'the middle link ran out, not the grandchild\'s own');
        assert.deepEqual(await usage(toMiddle.split('~').at(-1)!), [200, 1], `${check}: the middle link counts its delegate's spend`);
        assert.deepEqual(await usage(toB!.split('~').at(-1)!), [0, 0], `${check}: the refused spend spent nothing`);
      }
      assert.deepEqual(await usage(root.jws), [400, 2], 'the root counts the allowed spend of each case');
    });

    test('each dimension widened back to the root\'s is DENY permit_invalid delegation_widened, naming it', async () => {
      const key = await svc.keyHeader([]);
      const [holder, middle, leaf] = [newAgent(), newAgent(), newAgent()];
      const now = Math.floor(Date.now() / 1000);
      const root = await issue(svc, holder.did, ROOT, { notBefore: new Date((now - 120) * 1000), ttlSeconds: 3600 });
      const base = claimsOf(root.jws);
      const sign = (by: typeof holder, parent: string, sub: string, over: Partial<PermitClaims>, gavel: Omit<GavelConstraints, 'parent'>) => signPermitClaims({
        iss: by.did, sub, aud: base.aud, jti: crypto.randomUUID(), iat: now, nbf: now - 60, exp: now + 1800, ...over,
        gavel: { ...gavel, parent: permitCommitment(parent) },
      }, `${by.did}#k`, by.sign);
      const link1 = await sign(holder, root.jws, middle.did, {}, MIDDLE);
      const chain = (link2: string) => `${root.jws}~${link1}~${link2}`;
      const pay = { agent: leaf.did, action: 'pay', resource: 'resource://shop/a/1', amount: eur(100) };
      const same = await sign(middle, link1, leaf.did, {}, MIDDLE);
      assert.equal((await decide(svc, key, { ...pay, permit: chain(same) })).decision, 'ALLOW', 'the same grant again is no wider');
      const { max_per_request: _m, ...noPerRequest } = MIDDLE;
      const { budget: _b, ...noBudget } = MIDDLE;
      const { max_uses: _u, ...noUses } = MIDDLE;
      const cases: [RegExp, Partial<PermitClaims>, Omit<GavelConstraints, 'parent'>][] = [
        [/action "read" is not granted/, {}, { ...MIDDLE, actions: ROOT.actions }],
        [/resource pattern "resource:\/\/shop\/\*" is not covered/, {}, { ...MIDDLE, resources: ROOT.resources }],
        [/max_per_request widened: the child allows 1000/, {}, { ...MIDDLE, max_per_request: ROOT.max_per_request }],
        [/max_per_request widened: .* sets no limit/, {}, noPerRequest],
        [/budget widened: the child allows 5000/, {}, { ...MIDDLE, budget: ROOT.budget }],
        [/budget widened: .* sets no limit/, {}, noBudget],
        [/max_uses widened: the parent allows 5, the child 10/, {}, { ...MIDDLE, max_uses: ROOT.max_uses }],
        [/max_uses widened: the parent allows 5, the child unlimited/, {}, noUses],
        [/valid before its parent/, { nbf: base.nbf }, MIDDLE],
        [/expires after its parent/, { exp: base.exp }, MIDDLE],
      ];
      for (const [names, over, gavel] of cases) {
        const d = await decide(svc, key, { ...pay, permit: chain(await sign(middle, link1, leaf.did, over, gavel)) });
        assert.deepEqual([d.decision, d.reason_code], ['DENY', 'permit_invalid'], `${names}: ${JSON.stringify(d)}`);
        assert.match(d.detail ?? '', /^delegation_widened: /);
        assert.match(d.detail ?? '', names);
      }
    });
  });
}
