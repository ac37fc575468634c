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

// Characters are written into one scratch buffer and read out as a single string: building the id
// by concatenation made some 25 intermediate strings per id, several ids per request.
const CODES = Buffer.from(ALPHABET, 'latin1');
const scratch = Buffer.alloc(64);

function base32(value: number, at: number, digits: number): void {
  for (let i = digits - 1; i >= 0; i--) {
    scratch[at + i] = CODES[value % 32]!;
    value = Math.floor(value / 32);
  }
}

export function newId(prefix: IdPrefix, now = Date.now()): string {
  let p = scratch.write(prefix, 0, 'latin1');
  scratch[p++] = 0x5f; // '_'
  base32(now, p, 10); // 48 bits of milliseconds
  // 80 random bits -> 16 base32 characters: two 40-bit halves, each exact in a double (no BigInt:
  // this runs several times per request).
  const b = random10();
  base32(b[0]! * 2 ** 32 + ((b[1]! << 24) >>> 0) + (b[2]! << 16) + (b[3]! << 8) + b[4]!, p + 10, 8);
  base32(b[5]! * 2 ** 32 + ((b[6]! << 24) >>> 0) + (b[7]! << 16) + (b[8]! << 8) + b[9]!, p + 18, 8);
  return scratch.toString('latin1', 0, p + 26);
}

const ID_RE = /^[a-z]{2,5}_[0-9a-hjkmnp-tv-z]{26}$/;
/** True when `value` has the shape of an id with this prefix (not whether it exists). */
export function isId(value: string, prefix?: IdPrefix): boolean {
  return ID_RE.test(value) && (prefix === undefined || value.startsWith(prefix + '_'));
}
