// CSRF: OWASP's signed double-submit cookie. The token is `<nonce>.<HMAC-SHA256(key, session id | nonce)>`,
// so a token minted for one session is worthless in another, and an attacker who can plant a cookie
// cannot forge one. The HMAC key is generated once and kept in the settings table, so every
// instance on the same database agrees.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Store } from '../../store/store.ts';

const KEY_SETTING = 'csrf_hmac_key';
const keys = new WeakMap<Store, Promise<Buffer>>();

async function loadKey(store: Store): Promise<Buffer> {
  const read = async () => (await store.db.selectFrom('settings').select('value').where('key', '=', KEY_SETTING).executeTakeFirst())?.value;
  let value = await read();
  if (!value) {
    await store.db.insertInto('settings').values({ key: KEY_SETTING, value: randomBytes(32).toString('hex') })
      .onConflict((oc) => oc.column('key').doNothing()).execute();
    value = await read();
  }
  if (!value) throw new Error('CSRF key could not be stored');
  return Buffer.from(value, 'hex');
}

/** The server's CSRF HMAC key (created on first use, then cached for this store). */
export function csrfKey(store: Store): Promise<Buffer> {
  let k = keys.get(store);
  if (!k) {
    k = loadKey(store);
    k.catch(() => keys.delete(store));
    keys.set(store, k);
  }
  return k;
}

const mac = (key: Buffer, sessionId: string, nonce: string) => createHmac('sha256', key).update(`${sessionId}|${nonce}`).digest('base64url');

export function mintCsrfToken(key: Buffer, sessionId: string): string {
  const nonce = randomBytes(16).toString('base64url');
  return `${nonce}.${mac(key, sessionId, nonce)}`;
}

/** Constant-time check that `token` was minted for `sessionId` with `key`. */
export function verifyCsrfToken(key: Buffer, sessionId: string, token: string | undefined): boolean {
  if (typeof token !== 'string' || token.length > 200) return false;
  const m = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return false;
  const expected = Buffer.from(mac(key, sessionId, m[1]!));
  const given = Buffer.from(m[2]!);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** Constant-time equality of two strings (header against cookie). */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
