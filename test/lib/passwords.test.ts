// Passwords are compared in their NFKC form (NIST SP 800-63B 5.1.1.2): the same password typed on
// another system or keyboard signs in; hashes made before normalisation still verify as typed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hash } from '@node-rs/argon2';
import { ARGON2_PARAMS, hashPassword, verifyPassword } from '../../src/lib/passwords.ts';
import { passwordLength, passwordProblem } from '../../src/domain/access/password-rule.ts';

const composed = 'caf\u00e9 au lait, merci';
const decomposed = 'cafe\u0301 au lait, merci';

test('a password verifies in any Unicode form of it: composed, decomposed, full-width', async () => {
  assert.notEqual(composed, decomposed);
  const stored = await hashPassword(decomposed);
  assert.equal(await verifyPassword(stored, composed), true, 'precomposed é against e + combining accent');
  assert.equal(await verifyPassword(stored, decomposed), true);
  assert.equal(await verifyPassword(stored, 'cafe au lait, merci'), false, 'an accent dropped is another password');
  const wide = await hashPassword('\uff30\uff41\uff53\uff53 phrase 2026');
  assert.equal(await verifyPassword(wide, 'Pass phrase 2026'), true, 'full-width letters are their ASCII twins');
  assert.equal(await verifyPassword(wide, 'pass phrase 2026'), false, 'case still counts');
});

test('a hash made of the password as typed, before normalisation, still verifies as typed', async () => {
  const legacy = await hash(decomposed, ARGON2_PARAMS);
  assert.equal(await verifyPassword(legacy, decomposed), true);
  assert.equal(await verifyPassword(legacy, 'cafe\u0301 au lait, merde'), false);
  assert.equal(await verifyPassword('not a hash', decomposed), false);
});

test('the rule counts and checks the normalised form', () => {
  assert.equal(passwordLength('e\u0301'.repeat(12)), 12, 'e + accent is one character once composed');
  assert.equal(passwordProblem('ae\u0301cd'.repeat(2) + 'xyz', 'bob')?.code, 'password_too_short', '11 characters once composed, 13 typed');
  assert.equal(passwordProblem('\uff41\uff4c\uff49\uff43\uff45 likes tea', 'alice')?.code, 'password_too_weak', 'the name spelt full-width is the name');
});
