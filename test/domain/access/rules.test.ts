// Pure access rules: the SoD document, role subsets, throttling, session lifetimes, passwords, names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEFAULT_SOD, mayActivate, sodConflict, sodViolations, validateSod } from '../../../src/domain/access/sod.ts';
import { effectiveRoles, missingRoles } from '../../../src/domain/access/role-subset.ts';
import { afterFailure, lockRemaining, ACCOUNT_LIMITS, ADDRESS_LIMITS } from '../../../src/domain/access/throttle.ts';
import { sessionVerdict, SESSION_LIFETIMES } from '../../../src/domain/access/session-lifetime.ts';
import { passwordProblem, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../../src/domain/access/password-rule.ts';
import * as lib from '../../../src/lib/passwords.ts';
import { nameProblem, normalizeName } from '../../../src/domain/access/names.ts';
import { ROLES } from '../../../src/domain/access/roles.ts';

test('validateSod normalizes pairs and reports every error at once', () => {
  const ok = validateSod({ exclusive_roles: [['POLICY_AUTHOR', 'ADMIN'], ['APPROVER', 'PERMIT_ISSUER']], four_eyes_policy_activation: true });
  assert.deepEqual(ok, { ok: true, value: { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR'], ['APPROVER', 'PERMIT_ISSUER']], four_eyes_policy_activation: true } });
  const bad = validateSod({ exclusive_roles: [['ADMIN', 'ADMIN'], ['ADMIN', 'ROOT'], 'x', ['ADMIN', 'AUDITOR'], ['AUDITOR', 'ADMIN']], four_eyes_policy_activation: 1, extra: 1 });
  assert.equal(bad.ok, false);
  if (!bad.ok) {
    assert.deepEqual(bad.errors.map((e) => `${e.pointer} ${e.code}`).sort(), [
      '/exclusive_roles required_pair', '/exclusive_roles/0 not_allowed', '/exclusive_roles/1/1 not_allowed', '/exclusive_roles/2 wrong_type', '/exclusive_roles/4 duplicate',
      '/extra unknown_field', '/four_eyes_policy_activation wrong_type',
    ]);
  }
  for (const v of [null, [], 'x', 1, undefined]) assert.equal(validateSod(v).ok, false);
  const eleven = validateSod({ exclusive_roles: Array.from({ length: 11 }, () => ['ADMIN', 'POLICY_AUTHOR']), four_eyes_policy_activation: false });
  assert.deepEqual(eleven.ok ? [] : eleven.errors.map((e) => `${e.pointer} ${e.code}`), ['/exclusive_roles too_many']);
  // ADMIN and POLICY_AUTHOR are always kept apart: a document may add pairs, never drop that one.
  const dropped = validateSod({ exclusive_roles: [['APPROVER', 'PERMIT_ISSUER']], four_eyes_policy_activation: false });
  assert.deepEqual(dropped.ok ? [] : dropped.errors.map((e) => `${e.pointer} ${e.code}`), ['/exclusive_roles required_pair']);
});

test('validateSod never throws on arbitrary input', () => {
  fc.assert(fc.property(fc.anything(), (v) => { validateSod(v); }));
});

test('SoD rules: conflicts, violations, four eyes', () => {
  assert.deepEqual(sodConflict(DEFAULT_SOD, ['ADMIN'], 'POLICY_AUTHOR'), ['ADMIN', 'POLICY_AUTHOR']);
  assert.deepEqual(sodConflict(DEFAULT_SOD, ['POLICY_AUTHOR'], 'ADMIN'), ['ADMIN', 'POLICY_AUTHOR']);
  assert.equal(sodConflict(DEFAULT_SOD, ['ADMIN'], 'AUDITOR'), null);
  assert.deepEqual(sodViolations(DEFAULT_SOD, ['ADMIN', 'POLICY_AUTHOR', 'AUDITOR']), [['ADMIN', 'POLICY_AUTHOR']]);
  assert.equal(mayActivate({ ...DEFAULT_SOD, four_eyes_policy_activation: true }, 'prn_a', 'prn_a'), false);
  assert.equal(mayActivate({ ...DEFAULT_SOD, four_eyes_policy_activation: true }, 'prn_a', 'prn_b'), true);
  assert.equal(mayActivate({ ...DEFAULT_SOD, four_eyes_policy_activation: false }, 'prn_a', 'prn_a'), true);
});

test('role subsets', () => {
  assert.deepEqual(missingRoles(['ADMIN', 'POLICY_AUTHOR', 'ADMIN'], ['ADMIN']), ['POLICY_AUTHOR']);
  assert.deepEqual(effectiveRoles(['ADMIN', 'AUDITOR'], ['AUDITOR']), ['AUDITOR']);
  fc.assert(fc.property(fc.subarray([...ROLES]), fc.subarray([...ROLES]), (req, held) => {
    const missing = missingRoles(req, held);
    assert.ok(missing.every((r) => !held.includes(r)));
    assert.ok(effectiveRoles(req, held).every((r) => held.includes(r)));
  }));
});

test('throttle: locks at the Nth failure, doubles, caps, and a new window forgets', () => {
  const t0 = new Date('2026-01-01T00:00:00Z');
  let s = undefined as ReturnType<typeof afterFailure> | undefined;
  for (let i = 1; i < ACCOUNT_LIMITS.lockAfter; i++) {
    s = afterFailure(s, t0, ACCOUNT_LIMITS);
    assert.equal(lockRemaining(s, t0), 0);
  }
  s = afterFailure(s, t0, ACCOUNT_LIMITS);
  assert.equal(lockRemaining(s, t0), ACCOUNT_LIMITS.baseLockMs);
  s = afterFailure(s, t0, ACCOUNT_LIMITS);
  assert.equal(lockRemaining(s, t0), 2 * ACCOUNT_LIMITS.baseLockMs);
  for (let i = 0; i < 50; i++) s = afterFailure(s, t0, ACCOUNT_LIMITS);
  assert.equal(lockRemaining(s, t0), ACCOUNT_LIMITS.maxLockMs);
  const later = new Date(t0.getTime() + ACCOUNT_LIMITS.windowMs + ACCOUNT_LIMITS.maxLockMs + 1);
  assert.equal(lockRemaining(s, later), 0);
  assert.equal(afterFailure(s, later, ACCOUNT_LIMITS).failures, 1);
});

test('throttle windows and lifetimes are the documented ones (docs/identity.md, decisions 0200 and 0203)', () => {
  // The 5th account failure within 15 minutes of the first locks for 30 s; the 50th from an address.
  const t0 = new Date('2026-01-01T00:00:00Z');
  const at = (min: number) => new Date(t0.getTime() + min * 60_000);
  for (const [limits, n] of [[ACCOUNT_LIMITS, 5], [ADDRESS_LIMITS, 50]] as const) {
    let s = undefined as ReturnType<typeof afterFailure> | undefined;
    for (let i = 0; i < n - 1; i++) s = afterFailure(s, at((14 * i) / (n - 1)), limits);
    assert.equal(lockRemaining(s, at(14)), 0);
    s = afterFailure(s, at(14.9), limits);
    assert.equal(lockRemaining(s, at(14.9)), 30_000, `failure ${n} within 15 minutes locks`);
    assert.equal(limits.maxLockMs, 15 * 60_000);
  }
  assert.deepEqual(SESSION_LIFETIMES, { idleMs: 30 * 60_000, absoluteMs: 12 * 3600_000 });
});

test('session verdicts', () => {
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const s = { last_seen_at: new Date(t0).toISOString(), expires_at: new Date(t0 + SESSION_LIFETIMES.absoluteMs).toISOString(), ended_at: null };
  assert.equal(sessionVerdict(s, new Date(t0 + 1000)), 'active');
  assert.equal(sessionVerdict(s, new Date(t0 + SESSION_LIFETIMES.idleMs)), 'idle_expired');
  assert.equal(sessionVerdict({ ...s, last_seen_at: new Date(t0 + SESSION_LIFETIMES.absoluteMs - 1).toISOString() }, new Date(t0 + SESSION_LIFETIMES.absoluteMs)), 'absolute_expired');
  assert.equal(sessionVerdict({ ...s, ended_at: new Date(t0).toISOString() }, new Date(t0)), 'ended');
  // The clock stepped back as far as the idle lifetime: the last use lies that far ahead, the idleness cannot be told.
  assert.equal(sessionVerdict(s, new Date(t0 - SESSION_LIFETIMES.idleMs)), 'idle_expired');
  assert.equal(sessionVerdict(s, new Date(t0 - SESSION_LIFETIMES.idleMs + 1000)), 'active');
});

test('password and name rules', () => {
  assert.equal(MIN_PASSWORD_LENGTH, lib.MIN_PASSWORD_LENGTH);
  assert.equal(MAX_PASSWORD_LENGTH, lib.MAX_PASSWORD_LENGTH);
  assert.equal(passwordProblem('short', 'bob')?.code, 'password_too_short');
  assert.equal(passwordProblem('x'.repeat(300), 'bob')?.code, 'password_too_long');
  assert.equal(passwordProblem('abababababababab', 'bob')?.code, 'password_too_weak');
  assert.equal(passwordProblem('abcabcabcabcabca', 'bob')?.code, 'password_too_weak', 'three distinct characters');
  assert.equal(passwordProblem('abcdabcdabcdabcd', 'bob'), null, 'four are enough');
  assert.equal(passwordProblem('my name is alice ok', 'alice')?.code, 'password_too_weak');
  assert.equal(passwordProblem('correct horse battery staple', 'alice'), null);
  assert.equal(normalizeName('  Alice@Example.ORG '), 'alice@example.org');
  assert.equal(nameProblem('a'.repeat(129))?.code, 'too_long');
  assert.equal(nameProblem('has space')?.code, 'bad_format');
  assert.equal(nameProblem('')?.code, 'too_short');
  assert.equal(nameProblem('ci-bot.prod'), null);
});

test('the foundation hashes with Argon2id at OWASP parameters', async () => {
  assert.ok(lib.ARGON2_PARAMS.memoryCost >= 19456);
  assert.ok(lib.ARGON2_PARAMS.timeCost >= 2);
  assert.equal(lib.ARGON2_PARAMS.parallelism, 1);
  const h = await lib.hashPassword('correct horse battery staple');
  assert.match(h, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  assert.equal(await lib.verifyPassword(h, 'correct horse battery staple'), true);
  assert.equal(await lib.verifyPassword(h, 'wrong'), false);
});
