// Every permit check, reached through POST /v1/authorize rather than the domain alone: the route
// runs its own sequence of subject, time and coverage checks around the cached signature check
// (services/authorize/authorize.ts), and the live counters are spent in the commit (spend.ts). Each
// failure is DENY `permit_invalid` whose detail starts with the check (docs/reason-codes.md) and
// carries none of the permit's signed material.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { recordedDecision } from '../support/decisions.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, decide, delegate, issue, newAgent, type Agent } from '../support/authorize.ts';
import { permitCommitment, permitKeyId, signPermitClaims, type PermitClaims } from '../../src/domain/permit/index.ts';
import { permitKeyName } from '../../src/services/permits/permits.ts';
import { signUnchecked } from '../domain/permit/helpers.ts';

const PAY = { actions: ['pay', 'read'], resources: ['resource://shop/*', 'resource://docs/*'] };
const claimsOf = (jws: string) => JSON.parse(Buffer.from(jws.split('~').at(-1)!.split('.')[1]!, 'base64url').toString('utf8')) as PermitClaims;
const eur = (minor: number) => ({ minor, currency: 'EUR' });

for (const backend of backends()) {
  describe(`permit checks through /v1/authorize on ${backend.name}`, () => {
    let svc: TestService;
    let key: { authorization: string };
    const authorize = (body: Record<string, unknown>) => decide(svc, key, body);
    /** DENY permit_invalid, the detail starting with `check:` and holding no part of the permit. */
    const assertRefused = async (body: Record<string, unknown> & { permit: string }, check: string) => {
      const d = await authorize(body);
      assert.equal(d.decision, 'DENY', `${check}: ${JSON.stringify(d)}`);
      assert.equal(d.reason_code, 'permit_invalid', `${check}: ${JSON.stringify(d)}`);
      assert.ok(d.detail?.startsWith(`${check}:`), `${check}: the detail starts with the check, got ${JSON.stringify(d.detail)}`);
      for (const part of body.permit.split(/[.~]/)) if (part.length > 16) assert.ok(!d.detail!.includes(part), `${check}: the detail repeats the permit`);
      // Verified or not, the decision's event names the presented permit by its last link's SHA-256.
      const leaf = permitCommitment(body.permit.split('~').at(-1)!);
      assert.equal((await recordedDecision(svc.ts.store.db, d.audit_id)).permit_commitment, leaf, `${check}: the event's permit_commitment`);
      return d.detail!;
    };
    /** Claims signed by the project's own permit key, as the service would sign them. */
    const signAsProject = async (claims: PermitClaims) => {
      const name = permitKeyName(svc.projectId);
      return signPermitClaims(claims, permitKeyId(await svc.deps.signer.publicKey(name)), (m) => svc.deps.signer.sign(name, m));
    };

    before(async () => {
      svc = await startService(backend);
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
    });
    after(async () => { await svc.stop(); });

    test('a link limiting money in two currencies (max_per_request in one, budget in another) is refused as claims, not left to deny each request', async () => {
      const agent = newAgent();
      const claims = claimsOf((await issue(svc, agent.did, PAY)).jws);
      // Issuance refuses it (signPermitClaims): only a holder of the project key signing by hand makes one.
      const name = permitKeyName(svc.projectId);
      const permit = await signUnchecked({ ...claims, gavel: { ...claims.gavel, max_per_request: { minor: 500, currency: 'USD' }, budget: eur(5_000) } },
        permitKeyId(await svc.deps.signer.publicKey(name)), (m) => svc.deps.signer.sign(name, m));
      const detail = await assertRefused({ agent: agent.did, action: 'read', resource: 'resource://docs/a', permit }, 'claims');
      assert.equal(detail, 'claims: gavel.max_per_request and gavel.budget must be in one currency (they are in USD and EUR)');
    });

    test('signature, issuer, audience and time: each named', async () => {
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, PAY);
      const read = { agent: agent.did, action: 'read', resource: 'resource://docs/a' };
      assert.equal((await authorize({ ...read, permit: jws })).decision, 'ALLOW', 'the untouched permit is good');
      const claims = claimsOf(jws);
      const name = permitKeyName(svc.projectId);
      const impostor = newAgent();
      const forged = await signPermitClaims(claims, permitKeyId(await svc.deps.signer.publicKey(name)), impostor.sign);
      await assertRefused({ ...read, permit: forged }, 'signature');
      await assertRefused({ ...read, permit: 'not-a-permit-at-all-just-text' }, 'malformed');
      await assertRefused({ ...read, permit: await signAsProject({ ...claims, iss: 'gavel:project:prj_other' }) }, 'issuer');
      await assertRefused({ ...read, permit: await signAsProject({ ...claims, aud: 'prj_other' }) }, 'audience');
      const later = await issue(svc, agent.did, PAY, { notBefore: new Date(Date.now() + 600_000) });
      await assertRefused({ ...read, permit: later.jws }, 'not_yet_valid');
      const expired = await issue(svc, agent.did, PAY, { ttlSeconds: -10, notBefore: new Date(Date.now() - 60_000) });
      await assertRefused({ ...read, permit: expired.jws }, 'expired');
      await assertRefused({ ...read, agent: newAgent().did, permit: jws }, 'subject_mismatch');
    });

    test('a delegation wider than its parent is delegation_widened, though each link is signed by the right agent', async () => {
      const parent = newAgent();
      const child = newAgent();
      const grandchild = newAgent();
      const root = await issue(svc, parent.did, PAY);
      const toChild = await delegate(root.jws, parent, child.did, { actions: ['read'], resources: ['resource://docs/*'] });
      // The child signs a link to the grandchild adding `pay`, by hand: delegatePermit refuses to.
      const leaf = claimsOf(toChild);
      const widened = await signPermitClaims({
        iss: child.did, sub: grandchild.did, aud: leaf.aud, jti: crypto.randomUUID(), iat: leaf.iat, nbf: leaf.nbf, exp: leaf.exp,
        gavel: { ...leaf.gavel, actions: ['read', 'pay'], parent: permitCommitment(toChild.split('~').at(-1)!) },
      }, `${child.did}#x`, (child as Agent).sign);
      await assertRefused({ agent: grandchild.did, permit: `${toChild}~${widened}`, action: 'read', resource: 'resource://docs/a' }, 'delegation_widened');
    });

    test('a chain that is too long, does not link up, or is signed by a DID the service cannot resolve: each named', async () => {
      const parent = newAgent();
      const child = newAgent();
      const root = await issue(svc, parent.did, PAY);
      const base = claimsOf(root.jws);
      const read = { agent: child.did, action: 'read', resource: 'resource://docs/a' };
      const link = (over: Partial<PermitClaims>, signer: Agent = parent, kid = `${parent.did}#x`) => signPermitClaims({
        iss: parent.did, sub: child.did, aud: base.aud, jti: crypto.randomUUID(), iat: base.iat, nbf: base.nbf, exp: base.exp,
        gavel: { ...PAY, parent: root.commitment }, ...over,
      } as PermitClaims, kid, signer.sign);
      assert.equal((await authorize({ ...read, permit: `${root.jws}~${await link({})}` })).decision, 'ALLOW', 'the chain as it should be');
      await assertRefused({ ...read, permit: `${root.jws}~${await link({ gavel: { ...PAY, parent: 'f'.repeat(64) } })}` }, 'chain_broken');
      await assertRefused({ ...read, permit: Array(9).fill(root.jws).join('~') }, 'chain_too_long');
      // A root issued to a did:web agent, which delegates: no resolver is configured for did:web (fail closed).
      const web = 'did:web:agents.example.com';
      const webRoot = await issue(svc, web, PAY);
      const fromWeb = await signPermitClaims({ ...claimsOf(webRoot.jws), iss: web, sub: child.did, jti: crypto.randomUUID(),
        gavel: { ...PAY, parent: webRoot.commitment } } as PermitClaims, `${web}#key-1`, newAgent().sign);
      await assertRefused({ ...read, permit: `${webRoot.jws}~${fromWeb}` }, 'did_unresolvable');
    });

    test('every dimension a link could widen is refused end to end, the detail naming it', async () => {
      const parent = newAgent();
      const child = newAgent();
      const limits = { max_per_request: eur(1_000), budget: eur(5_000), max_uses: 10 };
      const root = await issue(svc, parent.did, { actions: ['pay'], resources: ['resource://shop/*'], ...limits });
      const base = claimsOf(root.jws);
      const link = (over: Partial<PermitClaims>, gavel: Record<string, unknown>) => signPermitClaims({
        iss: parent.did, sub: child.did, aud: base.aud, jti: crypto.randomUUID(), iat: base.iat, nbf: base.nbf, exp: base.exp, ...over,
        gavel: { actions: ['pay'], resources: ['resource://shop/*'], ...limits, ...gavel, parent: root.commitment },
      } as PermitClaims, `${parent.did}#x`, parent.sign);
      const pay = { agent: child.did, action: 'pay', resource: 'resource://shop/1', amount: eur(100) };
      assert.equal((await authorize({ ...pay, permit: `${root.jws}~${await link({}, {})}` })).decision, 'ALLOW', 'the same grant is no wider');
      const { max_uses: _uses, ...noUses } = limits;
      const { budget: _budget, ...noBudget } = limits;
      const cases: [RegExp, Partial<PermitClaims>, Record<string, unknown>][] = [
        [/action "refund" is not granted/, {}, { actions: ['pay', 'refund'] }],
        [/resource pattern "resource:\/\/\*" is not covered/, {}, { resources: ['resource://*'] }],
        [/max_per_request widened/, {}, { max_per_request: eur(1_001) }],
        [/max_per_request widened: the child is in USD/, {}, { max_per_request: { minor: 1_000, currency: 'USD' }, budget: { minor: 5_000, currency: 'USD' } }],
        [/budget widened/, {}, { budget: eur(5_001) }],
        [/max_uses widened/, {}, { max_uses: 11 }],
        [/valid before its parent/, { nbf: base.nbf - 60 }, {}],
        [/expires after its parent/, { exp: base.exp + 60 }, {}],
      ];
      for (const [names, over, gavel] of cases) {
        const permit = `${root.jws}~${await link(over, gavel)}`;
        await assertRefused({ ...pay, permit }, 'delegation_widened');
        assert.match((await authorize({ ...pay, permit })).detail ?? '', names);
      }
      // A limit the parent sets binds the child: dropping it widens too (signed by hand, as the
      // claims are otherwise whole).
      const dropped = async (gavel: Record<string, unknown>) => signPermitClaims({
        iss: parent.did, sub: child.did, aud: base.aud, jti: crypto.randomUUID(), iat: base.iat, nbf: base.nbf, exp: base.exp,
        gavel: { actions: ['pay'], resources: ['resource://shop/*'], ...gavel, parent: root.commitment },
      } as PermitClaims, `${parent.did}#x`, parent.sign);
      await assertRefused({ ...pay, permit: `${root.jws}~${await dropped(noUses)}` }, 'delegation_widened');
      await assertRefused({ ...pay, permit: `${root.jws}~${await dropped(noBudget)}` }, 'delegation_widened');
    });

    test('a delegated limit in a currency its parent limits no money in is refused as claims (the child keeps the parent\'s limit, and a link limits money in one currency), not left to coverage', async () => {
      const parent = newAgent();
      const child = newAgent();
      const root = await issue(svc, parent.did, { actions: ['pay'], resources: ['resource://shop/*'], max_per_request: eur(1_000) });
      const base = claimsOf(root.jws);
      // The root sets no budget; the child adds one.
      const withBudget = (budget: { minor: number; currency: string }) => signUnchecked({
        iss: parent.did, sub: child.did, aud: base.aud, jti: crypto.randomUUID(), iat: base.iat, nbf: base.nbf, exp: base.exp,
        gavel: { actions: ['pay'], resources: ['resource://shop/*'], max_per_request: eur(1_000), budget, parent: root.commitment },
      } as PermitClaims, `${parent.did}#x`, parent.sign);
      const pay = { agent: child.did, action: 'pay', resource: 'resource://shop/1' };
      const usd = `${root.jws}~${await withBudget({ minor: 500, currency: 'USD' })}`;
      for (const amount of [eur(100), { minor: 100, currency: 'USD' }]) {
        const detail = await assertRefused({ ...pay, amount, permit: usd }, 'claims');
        assert.equal(detail, 'claims: gavel.max_per_request and gavel.budget must be in one currency (they are in EUR and USD)');
      }
      assert.equal((await authorize({ ...pay, amount: eur(100), permit: `${root.jws}~${await withBudget(eur(500))}` })).decision, 'ALLOW', 'a budget in the parent\'s currency narrows');
    });

    test('spending through a delegate spends every link of its chain, and the tightest one stops it', async () => {
      const parent = newAgent();
      const child = newAgent();
      const root = await issue(svc, parent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: eur(300) });
      const toChild = await delegate(root.jws, parent, child.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: eur(300) });
      const byParent = { agent: parent.did, permit: root.jws, action: 'pay', resource: 'resource://shop/1', amount: eur(100) };
      const byChild = { ...byParent, agent: child.did, permit: toChild };
      // The parent spends 200 of its own 300; the child's link still has 300, but its root has 100.
      for (let i = 0; i < 2; i++) assert.equal((await authorize(byParent)).decision, 'ALLOW');
      assert.equal((await authorize(byChild)).decision, 'ALLOW');
      await assertRefused(byChild, 'budget_exhausted');
      await assertRefused(byParent, 'budget_exhausted');
    });

    test('a refused spend names the link that ran out; spending through one permit leaves every other permit\'s counters alone', async () => {
      const parent = newAgent();
      const child = newAgent();
      const root = await issue(svc, parent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: eur(1_000), max_uses: 10 });
      const toChild = await delegate(root.jws, parent, child.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: eur(150), max_uses: 10 });
      const other = await issue(svc, parent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: eur(1_000), max_uses: 10 });
      const byChild = { agent: child.did, permit: toChild, action: 'pay', resource: 'resource://shop/1', amount: eur(100) };
      const byOther = { agent: parent.did, permit: other.jws, action: 'pay', resource: 'resource://shop/1', amount: eur(100) };
      assert.equal((await authorize(byOther)).decision, 'ALLOW');
      assert.equal((await authorize(byChild)).decision, 'ALLOW');
      // The child's own link refuses (the root has budget to spare), and the detail says which.
      assert.match(await assertRefused(byChild, 'budget_exhausted'), /^budget_exhausted: delegation link 1 of the permit /);
      const usage = async (commitment: string) => {
        const u = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', commitment).executeTakeFirstOrThrow();
        return [Number(u.spent_minor), Number(u.uses)];
      };
      assert.deepEqual(await usage(other.commitment), [100, 1], 'the other permit spent for its own ALLOW alone');
      assert.deepEqual(await usage(root.commitment), [100, 1]);
      const lastUse = await issue(svc, parent.did, { actions: ['pay'], resources: ['resource://shop/*'], max_uses: 1 });
      const byLastUse = { ...byOther, permit: lastUse.jws };
      assert.equal((await authorize(byLastUse)).decision, 'ALLOW');
      assert.match(await assertRefused(byLastUse, 'uses_exhausted'), /^uses_exhausted: the permit has no uses left \(1 allowed\)$/);
      assert.deepEqual(await usage(other.commitment), [100, 1]);
    });

    test('money coverage: over the per-request limit, another currency, no amount', async () => {
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { ...PAY, max_per_request: eur(1_000) });
      const pay = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1' };
      assert.equal((await authorize({ ...pay, amount: eur(1_000) })).decision, 'ALLOW', 'at the limit');
      await assertRefused({ ...pay, amount: eur(1_001) }, 'amount_exceeds_per_request');
      await assertRefused({ ...pay, amount: { minor: 5, currency: 'USD' } }, 'currency_mismatch');
      await assertRefused(pay, 'amount_required');
    });

    test('live counters name the limit that ran out, when a permit carries both a budget and a use count', async () => {
      const usesFirst = newAgent();
      const few = await issue(svc, usesFirst.did, { ...PAY, budget: eur(1_500), max_uses: 2 });
      const payFew = { agent: usesFirst.did, permit: few.jws, action: 'pay', resource: 'resource://shop/1', amount: eur(100) };
      for (let i = 0; i < 2; i++) assert.equal((await authorize(payFew)).decision, 'ALLOW');
      await assertRefused(payFew, 'uses_exhausted');

      const budgetFirst = newAgent();
      const small = await issue(svc, budgetFirst.did, { ...PAY, budget: eur(300), max_uses: 10 });
      const paySmall = { agent: budgetFirst.did, permit: small.jws, action: 'pay', resource: 'resource://shop/1', amount: eur(100) };
      for (let i = 0; i < 3; i++) assert.equal((await authorize(paySmall)).decision, 'ALLOW');
      await assertRefused(paySmall, 'budget_exhausted');
      // The refusals spent nothing.
      for (const [commitment, spent, uses] of [[few.commitment, 200, 2], [small.commitment, 300, 3]] as const) {
        const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', commitment).executeTakeFirstOrThrow();
        assert.deepEqual([usage.spent_minor, usage.uses], [spent, uses]);
      }
    });

    test('a permit whose own text has no well-formed spelling is a recorded DENY, never a 500, and is not echoed unbounded', async () => {
      const agent = newAgent();
      const b64 = (text: string) => Buffer.from(text).toString('base64url');
      const header = (extra: string) => b64(`{"alg":"EdDSA","typ":"gavel-permit+jwt","kid":"x"${extra}}`);
      const read = { agent: agent.did, action: 'read', resource: 'resource://docs/a' };
      // An alg whose quoted form is cut inside a surrogate pair, and member names that are lone
      // surrogates (JSON escapes): none of them signed, each read before any signature.
      const alg = b64(JSON.stringify({ alg: `${'a'.repeat(38)}\u{1F600}`, typ: 'gavel-permit+jwt', kid: 'x' }));
      await assertRefused({ ...read, permit: `${alg}.${b64('{}')}.AA` }, 'algorithm');
      await assertRefused({ ...read, permit: `${header(',"\\ud800":1')}.${b64('{}')}.AA` }, 'header');
      await assertRefused({ ...read, permit: `${header('')}.${b64('{"\\ud800":1}')}.AA` }, 'claims');
      await assertRefused({ ...read, permit: `${header('')}.${b64('{"\\udfff":1,"\\udfff":2}')}.AA` }, 'malformed');
      const long = `${header('')}.${b64(JSON.stringify({ ['x'.repeat(5000)]: 1 }))}.AA`;
      const d = await authorize({ ...read, permit: long });
      assert.equal(d.reason_code, 'permit_invalid');
      assert.ok(d.detail!.length < 200, `the detail quotes at most a bounded part of the permit, got ${d.detail!.length} characters`);
    });
  });
}
