// Password login. The answer and the work are the same whether or not the account exists: an
// unknown name is verified against a dummy Argon2id hash, and every attempt counts against the
// name (or, from a browser that signed in to it before, that device: device-cookie.ts) and the
// address alike until it succeeds.
import { randomBytes } from 'node:crypto';
import { normalizeName } from '../../domain/access/names.ts';
import { MAX_PASSWORD_LENGTH, passwordLength } from '../../domain/access/password-rule.ts';
import { hashPassword, verifyPassword } from '../../lib/passwords.ts';
import { lockFor, type Store } from '../../store/store.ts';
import { deviceCookieKey, mintDeviceCookie, verifiedDevice } from './device-cookie.ts';
import { passwordLock } from './password-reset.ts';
import { createSession, endSessionByToken, recordSessionEvent } from './sessions.ts';
import { settleSuccess, takeAttempt } from './throttle.ts';

let dummy: Promise<string> | undefined;
/** A hash of a random password with the same parameters, computed once per process. */
const dummyHash = () => (dummy ??= hashPassword(randomBytes(24).toString('base64url')));
/**
 * Computes the dummy hash before the first login: made on first use, it made the first unknown
 * name of each process answer a hash slower than a known one (which tells a name exists).
 */
export const prepareLogin = (): Promise<unknown> => dummyHash();
/** For tests: whether the dummy hash is under way or made. */
export const loginPrepared = (): boolean => dummy !== undefined;

export type LoginResult =
  | { ok: true; principalId: string; name: string; session: { id: string; token: string; expires_at: string }; deviceCookie: string }
  | { ok: false; reason: 'invalid_credentials' }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number };

/** `deviceCookies`: the device cookie values the request carried (only one minted for this name counts). */
export async function login(store: Store, input: { name: string; password: string; address: string; previousTokens?: readonly string[]; deviceCookies?: readonly string[] }, now: Date): Promise<LoginResult> {
  const name = normalizeName(input.name).slice(0, 256);
  // Checked without reading the account: a cookie binds the name, so unknown names fare the same.
  const key = await deviceCookieKey(store);
  const device = verifiedDevice(key, name, input.deviceCookies ?? [], now);
  const attempt = await takeAttempt(store, name, input.address, now, device);
  if (attempt.wait > 0) return { ok: false, reason: 'throttled', retryAfterSeconds: Math.ceil(attempt.wait / 1000) };

  const person = await store.db.selectFrom('principals').select(['id', 'name', 'password_hash', 'disabled_at'])
    .where('name', '=', name).where('kind', '=', 'person').executeTakeFirst();
  // Counted as registration counts it (characters): 256 emoji are 512 UTF-16 units, and a password
  // registration accepted must sign in. A longer one is never the password, and is not hashed whole.
  const bounded = passwordLength(input.password) <= MAX_PASSWORD_LENGTH;
  const usable = person && person.password_hash && !person.disabled_at && bounded;
  // Always the same Argon2id verification (two for a password that normalising changes, known name
  // or not: lib/passwords.ts), so timing does not tell a known name from an unknown one.
  const verified = await verifyPassword(usable ? person.password_hash! : await dummyHash(), bounded ? input.password : input.password.slice(0, MAX_PASSWORD_LENGTH));
  // A failure was counted when the attempt was taken.
  if (!usable || !verified) return { ok: false, reason: 'invalid_credentials' };
  return store.transaction(async (trx) => {
    // The password verified may have been reset since it was read (`gavel reset-password`, which
    // ends the person's sessions): no session for it then.
    await lockFor(trx, store.dialect, passwordLock(person.id));
    const current = await trx.selectFrom('principals').select('password_hash').where('id', '=', person.id).executeTakeFirst();
    if (current?.password_hash !== person.password_hash) return { ok: false as const, reason: 'invalid_credentials' as const };
    // A fresh session id at every login; every session the browser still carried is ended (fixation),
    // a second one planted beside it included.
    for (const token of input.previousTokens ?? []) await endSessionByToken(trx, token, 'replaced', now);
    await settleSuccess(trx, store.dialect, name, input.address, attempt);
    const session = await createSession(trx, person.id, now);
    await recordSessionEvent(trx, 'session.started', person.id, { session_id: session.id }, now);
    // A fresh nonce at every sign-in (OWASP): the browser is known to this account from now on.
    return { ok: true as const, principalId: person.id, name: person.name, session, deviceCookie: mintDeviceCookie(key, person.name, now) };
  });
}
