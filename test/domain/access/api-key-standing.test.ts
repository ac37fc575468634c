// The one rule an API key is judged by, on the machine plane and in the console's key list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { effectiveKeyRoles } from '../../../src/domain/access/api-key-standing.ts';

test('a key carries the minted roles its holder still holds through grants no newer than the key; none when it is not valid', () => {
  const live = { minted: ['AUDITOR', 'APPROVER', 'NOT_A_ROLE'], revoked: false, member: true, disabled: false, heldSinceKey: new Set(['AUDITOR', 'ADMIN']) };
  assert.deepEqual(effectiveKeyRoles(live), ['AUDITOR'], 'APPROVER is not held, ADMIN was never minted, an unknown name is dropped');
  assert.deepEqual(effectiveKeyRoles({ ...live, heldSinceKey: new Set() }), [], 'valid, with no role');
  for (const gone of [{ revoked: true }, { member: false }, { disabled: true }]) assert.equal(effectiveKeyRoles({ ...live, ...gone }), null, JSON.stringify(gone));
});
