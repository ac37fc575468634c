// Prefixed, sortable, opaque ids (DESIGN.md "Wire conventions"): `<prefix>_<26 chars>`,
// 48 bits of milliseconds then 80 random bits, Crockford base32, so ids sort by creation time.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export type IdPrefix =
  | 'prj' | 'prn' | 'key' | 'ses' | 'aud' | 'dec' | 'req' | 'exe' | 'pol' | 'apr' | 'apv'
  | 'apk' | 'agt' | 'pmt' | 'chk' | 'evt' | 'frz' | 'res' | 'cred' | 'chl';

// randomBytes is a system call; ids are minted several times per request, so draw from a pool.
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let offset = 0;
function random10(): Buffer {
  if (offset + 10 > POOL_SIZE) { pool = randomBytes(POOL_SIZE); offset = 0; }
  const out = pool.subarray(offset, offset + 10);
  offset += 10;
  return out;
}

export function newId(prefix: IdPrefix, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  // 80 random bits -> 16 base32 characters: two 40-bit halves, each exact in a double (no BigInt:
  // this runs several times per request).
  const b = random10();
  let hi = b[0]! * 2 ** 32 + ((b[1]! << 24) >>> 0) + (b[2]! << 16) + (b[3]! << 8) + b[4]!;
  let lo = b[5]! * 2 ** 32 + ((b[6]! << 24) >>> 0) + (b[7]! << 16) + (b[8]! << 8) + b[9]!;
  let rand = '';
  for (let i = 0; i < 8; i++) { rand = ALPHABET[lo % 32] + rand; lo = Math.floor(lo / 32); }
  for (let i = 0; i < 8; i++) { rand = ALPHABET[hi % 32] + rand; hi = Math.floor(hi / 32); }
  return `${prefix}_${time}${rand}`;
}

const ID_RE = /^[a-z]{2,5}_[0-9a-hjkmnp-tv-z]{26}$/;
/** True when `value` has the shape of an id with this prefix (not whether it exists). */
export function isId(value: string, prefix?: IdPrefix): boolean {
  return ID_RE.test(value) && (prefix === undefined || value.startsWith(prefix + '_'));
}
