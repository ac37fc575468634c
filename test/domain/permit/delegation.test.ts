import { test } from 'node:test';
import assert from 'node:assert/strict';
import { delegatePermit } from '../../../src/domain/permit/delegate.ts';
import { verifyPermit } from '../../../src/domain/permit/verify.ts';
import { permitCommitment } from '../../../src/domain/permit/commitment.ts';
import { signPermitClaims } from '../../../src/domain/permit/compact.ts';
import { PermitError } from '../../../src/domain/permit/types.ts';
import type { PermitClaims, VerifyResult } from '../../../src/domain/permit/types.ts';
import type { DelegationInput } from '../../../src/domain/permit/delegate.ts';
import { issuePermit } from '../../../src/domain/permit/issue.ts';
import { KEY, T0, decodePayload, fixture, newAgent, rootInput, tamper, signUnchecked } from './helpers.ts';
import type { Agent } from './helpers.ts';

function failure(r: VerifyResult) {
  assert.equal(r.ok, false, 'expected verification to fail');
  return r as Extract<VerifyResult, { ok: false }>;
}

const narrow = (sub: string, overrides: Partial<DelegationInput> = {}): DelegationInput => ({
  sub,
  jti: 'pmt_child',
  iat: T0 + 10,
  gavel: {
    actions: ['payments.create'],
    resources: ['resource://payments/eu/*'],
    max_per_request: { minor: 5_000, currency: 'EUR' },
    budget: { minor: 20_000, currency: 'EUR' },
    max_uses: 3,
  },
  ...overrides,
});

const leafOf = (chain: string) => chain.split('~').at(-1) as string;

/** Signs a child link by hand, bypassing delegatePermit's early checks, as an attacker would. */
async function handDelegate(chain: string, signer: Agent, edit: (c: PermitClaims) => void, sign: typeof signPermitClaims = signPermitClaims): Promise<string> {
  const parent = decodePayload(leafOf(chain)) as unknown as PermitClaims;
  const claims: PermitClaims = {
    iss: signer.did,
    sub: newAgent().did,
    aud: parent.aud,
    jti: 'pmt_hand',
    iat: T0 + 20,
    nbf: parent.nbf,
    exp: parent.exp,
    gavel: { ...structuredClone(parent.gavel), parent: permitCommitment(leafOf(chain)) },
  };
  edit(claims);
  return `${chain}~${await sign(claims, `${signer.did}#x`, signer.sign)}`;
}

test('alice delegates to bob, bob to carol: chain verifies with depth and commitments', async () => {
  const f = await fixture();
  const toBob = await delegatePermit(f.root, narrow(f.bob.did), f.alice.sign);
  const toCarol = await delegatePermit(
    toBob,
    narrow(f.carol.did, { jti: 'pmt_c', gavel: { actions: ['payments.create'], resources: ['resource://payments/eu/fr'], budget: { minor: 100, currency: 'EUR' }, max_per_request: { minor: 50, currency: 'EUR' }, max_uses: 1 } }),
    f.bob.sign,
  );
  const links = toCarol.split('~');
  assert.equal(links.length, 3);

  const r1 = await verifyPermit(toBob, f.ctx(f.bob.did));
  assert.ok(r1.ok);
  assert.equal(r1.permit.delegation_depth, 1);
  assert.equal(r1.permit.claims.iss, f.alice.did);

  const r = await verifyPermit(toCarol, f.ctx(f.carol.did));
  assert.ok(r.ok);
  assert.equal(r.permit.delegation_depth, 2);
  assert.equal(r.permit.agent, f.carol.did);
  assert.deepEqual(r.permit.chain, links.map(permitCommitment));
  assert.equal(r.permit.commitment, permitCommitment(links[2] as string));
  assert.equal(r.permit.claims.gavel.parent, permitCommitment(links[1] as string));
  assert.equal(r.permit.not_before, T0 + 10);

  // The middle agent cannot act with the leaf, and the leaf agent cannot act with the middle.
  assert.equal(failure(await verifyPermit(toCarol, f.ctx(f.bob.did))).check, 'subject_mismatch');
  assert.equal(failure(await verifyPermit(toBob, f.ctx(f.carol.did))).check, 'subject_mismatch');
});

test('delegatePermit refuses a widened child before signing', async () => {
  const f = await fixture();
  await assert.rejects(
    delegatePermit(f.root, narrow(f.bob.did, { gavel: { actions: ['payments.refund'], resources: ['resource://payments/*'] } }), f.alice.sign),
    (e: unknown) => e instanceof PermitError && e.code === 'delegation_widened',
  );
  await assert.rejects(
    delegatePermit(f.root, narrow(f.bob.did, { exp: T0 + 7200 }), f.alice.sign),
    (e: unknown) => e instanceof PermitError && e.code === 'delegation_widened',
  );
});

test('delegatePermit refuses a link signed with a key other than the did:key of the parent\'s subject', async () => {
  const f = await fixture();
  // bob's key signing for alice (a mixed-up key file): every decision would refuse the chain (signature).
  await assert.rejects(
    delegatePermit(f.root, narrow(f.carol.did), f.bob.sign),
    (e: unknown) => e instanceof PermitError && e.code === 'signature' && e.message.includes(f.alice.did),
  );
  assert.ok((await verifyPermit(await delegatePermit(f.root, narrow(f.carol.did), f.alice.sign), f.ctx(f.carol.did))).ok);
});

test('every widened dimension is caught by verification', async () => {
  const f = await fixture();
  const toBob = await delegatePermit(f.root, narrow(f.bob.did), f.alice.sign);
  const cases: Array<[string, (c: PermitClaims) => void]> = [
    ['actions', (c) => c.gavel.actions.push('payments.refund')],
    ['actions', (c) => (c.gavel.actions = ['*'])],
    ['resources', (c) => (c.gavel.resources = ['resource://payments/*'])],
    ['resources', (c) => (c.gavel.resources = ['resource://payments/eu/*', 'resource://invoices/42'])],
    ['max_per_request', (c) => (c.gavel.max_per_request = { minor: 5_001, currency: 'EUR' })],
    ['max_per_request', (c) => delete c.gavel.max_per_request],
    // In another currency than the parent's (both limits: a link limits money in one currency).
    ['max_per_request', (c) => { c.gavel.max_per_request = { minor: 1, currency: 'USD' }; c.gavel.budget = { minor: 1, currency: 'USD' }; }],
    ['budget', (c) => (c.gavel.budget = { minor: 20_001, currency: 'EUR' })],
    ['budget', (c) => delete c.gavel.budget],
    ['max_uses', (c) => (c.gavel.max_uses = 4)],
    ['max_uses', (c) => delete c.gavel.max_uses],
    ['nbf', (c) => (c.nbf = T0 + 9)],
    ['exp', (c) => (c.exp = T0 + 3601)],
  ];
  for (const [dimension, edit] of cases) {
    const chain = await handDelegate(toBob, f.bob, edit);
    const r = failure(await verifyPermit(chain, f.ctx(decodePayload(leafOf(chain)).sub as string)));
    assert.equal(r.check, 'delegation_widened', dimension);
    assert.equal(r.dimension, dimension);
    assert.equal(r.link, 2);
  }
});

test('a child limit the parent does not set, in a currency the parent limits no money in, is refused as claims: the child keeps the parent\'s limit, and one link limits money in one currency', async () => {
  const f = await fixture();
  const grant = { actions: ['payments.create'], resources: ['resource://payments/eu/*'] };
  const cases: Array<['max_per_request' | 'budget', 'max_per_request' | 'budget']> = [['max_per_request', 'budget'], ['budget', 'max_per_request']];
  for (const [set, added] of cases) {
    // A root that limits `set` in EUR, and not `added`.
    const root = await issuePermit(f.signer, KEY, rootInput(f.alice.did, { gavel: { ...grant, [set]: { minor: 5_000, currency: 'EUR' } } }));
    const inUsd = await handDelegate(root, f.alice, (c) => (c.gavel[added] = { minor: 1, currency: 'USD' }), signUnchecked);
    const r = failure(await verifyPermit(inUsd, f.ctx(decodePayload(leafOf(inUsd)).sub as string)));
    const currencies = set === 'max_per_request' ? 'EUR and USD' : 'USD and EUR';
    assert.deepEqual([r.check, r.link, r.detail], ['claims', 1, `gavel.max_per_request and gavel.budget must be in one currency (they are in ${currencies})`], added);
    // delegatePermit refuses it before signing, naming the same check.
    await assert.rejects(
      delegatePermit(root, { sub: f.bob.did, jti: 'pmt_usd', iat: T0 + 10, gavel: { ...grant, [set]: { minor: 5_000, currency: 'EUR' }, [added]: { minor: 1, currency: 'USD' } } }, f.alice.sign),
      (e: unknown) => e instanceof PermitError && e.code === 'claims' && e.message === r.detail,
    );
    // The same limit in the parent's currency narrows it.
    const inEur = await handDelegate(root, f.alice, (c) => (c.gavel[added] = { minor: 1, currency: 'EUR' }));
    assert.ok((await verifyPermit(inEur, f.ctx(decodePayload(leafOf(inEur)).sub as string))).ok, `${added} in EUR under ${set} in EUR`);
  }
});

test('a child equal to its parent, and one under a "*" parent, are not widened', async () => {
  const f = await fixture();
  const toBob = await delegatePermit(f.root, narrow(f.bob.did), f.alice.sign);
  const same = await handDelegate(toBob, f.bob, () => {});
  assert.ok((await verifyPermit(same, f.ctx(decodePayload(leafOf(same)).sub as string))).ok);

  const wide = await issuePermit(
    f.signer,
    KEY,
    rootInput(f.alice.did, { gavel: { actions: ['*'], resources: ['resource://*'], max_uses: 100 } }),
  );
  const child = await delegatePermit(
    wide,
    { sub: f.bob.did, jti: 'c', iat: T0, gavel: { actions: ['*'], resources: ['resource://x/*', 'resource://y'], max_uses: 100, budget: { minor: 5, currency: 'JPY' } } },
    f.alice.sign,
  );
  assert.ok((await verifyPermit(child, f.ctx(f.bob.did))).ok);
});

test('broken links: wrong parent commitment, wrong issuer, wrong signer, audience, reordered', async () => {
  const f = await fixture();
  const toBob = await delegatePermit(f.root, narrow(f.bob.did), f.alice.sign);
  const sub = (chain: string) => decodePayload(leafOf(chain)).sub as string;

  const wrongParent = await handDelegate(toBob, f.bob, (c) => (c.gavel.parent = permitCommitment(f.root)));
  assert.equal(failure(await verifyPermit(wrongParent, f.ctx(sub(wrongParent)))).check, 'chain_broken');

  const noParent = await handDelegate(toBob, f.bob, (c) => delete c.gavel.parent);
  assert.equal(failure(await verifyPermit(noParent, f.ctx(sub(noParent)))).check, 'chain_broken');

  // carol signs a link claiming to be from bob: issuer is right, key is not.
  const carolAsBob = await handDelegate(toBob, f.carol, (c) => (c.iss = f.bob.did));
  const kidFixed = carolAsBob.replace(/[^~]+$/, (leaf) => tamper(leaf, { header: (h) => (h.kid = f.bob.did) }));
  assert.equal(failure(await verifyPermit(carolAsBob, f.ctx(sub(carolAsBob)))).check, 'header');
  assert.equal(failure(await verifyPermit(kidFixed, f.ctx(sub(kidFixed)))).check, 'signature');

  // carol signs as herself, but the parent was granted to bob.
  const carolIssues = await handDelegate(toBob, f.carol, () => {});
  assert.equal(failure(await verifyPermit(carolIssues, f.ctx(sub(carolIssues)))).check, 'issuer');

  const otherAud = await handDelegate(toBob, f.bob, (c) => (c.aud = 'prj_other'));
  assert.equal(failure(await verifyPermit(otherAud, f.ctx(sub(otherAud)))).check, 'audience');

  // The child alone is not a root: its issuer is a DID, not the project.
  assert.equal(failure(await verifyPermit(leafOf(toBob), f.ctx(f.bob.did))).check, 'issuer');

  // Swapping the order breaks the chain.
  const [root, child] = toBob.split('~') as [string, string];
  assert.equal(failure(await verifyPermit(`${child}~${root}`, f.ctx(f.alice.did))).check, 'issuer');

  // Tampering with the child payload after signing.
  const tampered = `${root}~${tamper(child, { payload: (p) => ((p.gavel as { max_uses: number }).max_uses = 2) })}`;
  assert.equal(failure(await verifyPermit(tampered, f.ctx(f.bob.did))).check, 'signature');
});

test('chains longer than 8 links are refused before any crypto; 8 links verify', async () => {
  const f = await fixture();
  let chain = f.root;
  let holder: Agent = f.alice;
  for (let i = 0; i < 7; i++) {
    const next = newAgent();
    chain = await delegatePermit(chain, narrow(next.did, { jti: `pmt_${i}` }), holder.sign);
    holder = next;
  }
  const r = await verifyPermit(chain, f.ctx(holder.did));
  assert.ok(r.ok);
  assert.equal(r.permit.delegation_depth, 7);
  assert.equal(r.permit.chain.length, 8);

  await assert.rejects(delegatePermit(chain, narrow(newAgent().did), holder.sign), (e: unknown) => e instanceof PermitError && e.code === 'chain_too_long');
  const nine = await handDelegate(chain, holder, () => {});
  assert.equal(failure(await verifyPermit(nine, f.ctx(holder.did))).check, 'chain_too_long');
  // Nine garbage links: refused by count, not parsed.
  assert.equal(failure(await verifyPermit(Array(9).fill('x.y.z').join('~'), f.ctx(holder.did))).check, 'chain_too_long');
});

test('non-did:key issuers resolve through the injected resolver, or fail closed', async () => {
  const f = await fixture();
  const web = newAgent();
  const webDid = 'did:web:agents.example.com:bob';
  // Root to a did:web agent, who delegates to carol.
  const root = await issuePermit(f.signer, KEY, rootInput(webDid));
  const chain = await delegatePermit(root, narrow(f.carol.did), web.sign);

  assert.equal(failure(await verifyPermit(chain, f.ctx(f.carol.did))).check, 'did_unresolvable');
  const resolveDid = async (did: string) => (did === webDid ? web.publicKey : null);
  assert.ok((await verifyPermit(chain, { ...f.ctx(f.carol.did), resolveDid })).ok);
  const throwing = async () => {
    throw new Error('resolver down');
  };
  assert.equal(failure(await verifyPermit(chain, { ...f.ctx(f.carol.did), resolveDid: throwing })).check, 'did_unresolvable');
  const wrongKey = async () => f.alice.publicKey;
  assert.equal(failure(await verifyPermit(chain, { ...f.ctx(f.carol.did), resolveDid: wrongKey })).check, 'signature');
});
