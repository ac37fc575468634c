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
  const bytes = random10();
  let rand = '';
  // 80 bits -> 16 base32 characters, 5 bits at a time.
  let acc = 0n;
  for (const b of bytes) acc = (acc << 8n) | BigInt(b);
  for (let i = 0; i < 16; i++) {
    rand = ALPHABET[Number(acc & 31n)] + rand;
    acc >>= 5n;
  }
  return `${prefix}_${time}${rand}`;
}

const ID_RE = /^[a-z]{2,5}_[0-9a-hjkmnp-tv-z]{26}$/;
/** True when `value` has the shape of an id with this prefix (not whether it exists). */
export function isId(value: string, prefix?: IdPrefix): boolean {
  return ID_RE.test(value) && (prefix === undefined || value.startsWith(prefix + '_'));
}
