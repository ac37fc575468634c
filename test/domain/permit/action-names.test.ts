// docs/permits.md, "Format": "Actions are 1..64 names of 1 to 64 printable ASCII characters without
// spaces", and issuance validates with verification's code. Verification, delegation and issuance
// took any 1 to 64 characters (differential permit audit, session 53): such an action matches no
// request, but an agent's delegated link carrying control or bidi characters was recorded and shown
// in the console's permit view. Now a payload of the wrong shape: `claims`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { delegatePermit } from '../../../src/domain/permit/delegate.ts';
import { issuePermit } from '../../../src/domain/permit/issue.ts';
import { verifyPermit } from '../../../src/domain/permit/verify.ts';
import { PermitError } from '../../../src/domain/permit/types.ts';
import { permitCommitment } from '../../../src/domain/permit/commitment.ts';
import { KEY, T0, fixture, rootInput, signUnchecked } from './helpers.ts';

const BAD_ACTIONS = ['pay now', 'pay\u202Eetacilpud', 'pay\u0000', 'payé', 'pay\t'];
const isClaims = (e: unknown) => e instanceof PermitError && e.code === 'claims';

for (const action of BAD_ACTIONS) {
  test(`action ${JSON.stringify(action)} is refused as claims at verification, delegation and issuance`, async () => {
    const f = await fixture();
    const root = await issuePermit(f.signer, KEY, rootInput(f.alice.did, { gavel: { actions: ['*'], resources: ['resource://payments/*'] } }));
    const link = await signUnchecked({
      iss: f.alice.did, sub: f.bob.did, aud: 'prj_test', jti: 'd1', iat: T0, nbf: T0, exp: T0 + 3600,
      gavel: { actions: [action], resources: ['resource://payments/*'], parent: permitCommitment(root) },
    }, f.alice.did, f.alice.sign);
    const r = await verifyPermit(`${root}~${link}`, f.ctx(f.bob.did));
    assert.equal(r.ok ? 'ok' : r.check, 'claims', 'a link whose action is not printable ASCII without spaces verified');
    await assert.rejects(delegatePermit(root, { sub: f.bob.did, jti: 'd2', iat: T0, gavel: { actions: [action], resources: ['resource://payments/*'] } }, f.alice.sign), isClaims);
    await assert.rejects(issuePermit(f.signer, KEY, rootInput(f.alice.did, { gavel: { actions: [action], resources: ['resource://payments/*'] } })), isClaims);
  });
}

test('printable ASCII names, and "*" alone, still verify', async () => {
  const f = await fixture();
  for (const actions of [['pay'], ['*'], ['refund.partial', 'a-b_c:d/e~!']]) {
    const root = await issuePermit(f.signer, KEY, rootInput(f.alice.did, { gavel: { actions, resources: ['resource://payments/*'] } }));
    const r = await verifyPermit(root, f.ctx(f.alice.did));
    assert.equal(r.ok, true, JSON.stringify(actions));
  }
});
