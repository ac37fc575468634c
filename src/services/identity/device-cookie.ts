// Device cookies (OWASP "Slow Down Online Guessing Attacks with Device Cookies"): a browser that
// signed in to an account gets a cookie `<nonce>.<issued, epoch seconds>.<HMAC-SHA256(key, nonce |
// issued | name)>`. At login, a valid cookie for the name being signed in to moves the attempt from
// the account's counter to the device's (`device:<nonce>`), so an attacker who keeps the account
// locked does not lock out the browsers its owner already uses. Nothing is stored: the HMAC is the
// proof. The key is derived from the CSRF key (HKDF, its own label), so every instance agrees and a
// CSRF token can never pass for a device cookie or the other way round.
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Store } from '../../store/store.ts';
import { csrfKey } from './csrf.ts';

/** How long a device stays known: the cookie's Max-Age, and the oldest cookie the server accepts. */
export const DEVICE_COOKIE_LIFETIME_MS = 180 * 24 * 3600_000;

const keys = new WeakMap<Store, Promise<Buffer>>();

/** The device-cookie HMAC key: HKDF of the CSRF key with its own label (cached for this store). */
export function deviceCookieKey(store: Store): Promise<Buffer> {
  let k = keys.get(store);
  if (!k) {
    k = csrfKey(store).then((csrf) => Buffer.from(hkdfSync('sha256', csrf, Buffer.alloc(0), 'gavel device cookie v1', 32)));
    k.catch(() => keys.delete(store));
    keys.set(store, k);
  }
  return k;
}

// The nonce and the time have fixed shapes (checked before this is computed), so the name, last, cannot shift them.
const mac = (key: Buffer, nonce: string, issued: string, name: string) => createHmac('sha256', key).update(`${nonce}|${issued}|${name}`).digest('base64url');

/** A new device cookie value for the (normalized) account name, with a fresh nonce. */
export function mintDeviceCookie(key: Buffer, name: string, now: Date): string {
  const nonce = randomBytes(16).toString('base64url');
  const issued = String(Math.floor(now.getTime() / 1000));
  return `${nonce}.${issued}.${mac(key, nonce, issued, name)}`;
}

/**
 * The device nonce of the first of `values` that this server minted for `name` and that has not
 * expired; undefined otherwise (forged, tampered, another account's, too old, malformed). Constant-
 * time comparison; never throws.
 */
export function verifiedDevice(key: Buffer, name: string, values: readonly string[], now: Date): string | undefined {
  for (const value of values.slice(0, 4)) {
    const m = /^([A-Za-z0-9_-]{22})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
    if (!m) continue;
    const [, nonce, issued, given] = m as unknown as [string, string, string, string];
    if (now.getTime() - Number(issued) * 1000 >= DEVICE_COOKIE_LIFETIME_MS) continue;
    const expected = Buffer.from(mac(key, nonce, issued, name));
    if (timingSafeEqual(expected, Buffer.from(given))) return nonce;
  }
  return undefined;
}
