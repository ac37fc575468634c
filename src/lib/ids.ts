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
/** The offset in `pool` of 10 fresh random bytes. */
function random10(): number {
  if (offset + 10 > POOL_SIZE) { pool = randomBytes(POOL_SIZE); offset = 0; }
  const at = offset;
  offset += 10;
  return at;
}

// Built from strings, not bytes: each 10 random bits are one lookup in a table of every pair of
// characters, and the 10 characters of the millisecond are kept for the next id of the same
// millisecond (most, at thousands of ids a second). Writing characters into a scratch Buffer and
// reading it out took two calls into C++ per id (0.64 µs an id against 0.06 this way, measured).
const PAIRS: readonly string[] = Array.from({ length: 1024 }, (_, i) => ALPHABET[i >> 5]! + ALPHABET[i & 31]!);

let timeMs = NaN;
let timeChars = '';
/** The 10 characters of 48 bits of milliseconds, most significant first. */
function timePart(ms: number): string {
  if (ms !== timeMs) {
    let chars = '';
    let value = ms;
    for (let i = 0; i < 10; i++) {
      chars = ALPHABET[value % 32]! + chars;
      value = Math.floor(value / 32);
    }
    timeChars = chars;
    timeMs = ms;
  }
  return timeChars;
}

/** 40 bits (five bytes from `at`) as 8 characters, most significant first. */
function fortyBits(b: Buffer, at: number): string {
  const b0 = b[at]!, b1 = b[at + 1]!, b2 = b[at + 2]!, b3 = b[at + 3]!, b4 = b[at + 4]!;
  return PAIRS[(b0 << 2) | (b1 >> 6)]! + PAIRS[((b1 & 63) << 4) | (b2 >> 4)]! + PAIRS[((b2 & 15) << 6) | (b3 >> 2)]! + PAIRS[((b3 & 3) << 8) | b4]!;
}

export function newId(prefix: IdPrefix, now = Date.now()): string {
  // 48 bits of milliseconds, then 80 random bits as two 40-bit halves.
  const at = random10();
  return `${prefix}_${timePart(now)}${fortyBits(pool, at)}${fortyBits(pool, at + 5)}`;
}

/** A 40-bit number as 8 characters, most significant first. */
function fortyBitsOf(n: number): string {
  const hi = Math.floor(n / 2 ** 20);
  const lo = n % 2 ** 20;
  return PAIRS[hi >> 10]! + PAIRS[hi & 1023]! + PAIRS[lo >> 10]! + PAIRS[lo & 1023]!;
}

/** A monotonic sequence: the millisecond of its last id and that id's 80 random bits, two halves. */
interface Sequence { ms: number; high: number; low: number }

/** Moves `s` to its next id at `now`: a fresh random part in a new millisecond, else the last one plus one. */
function advance(s: Sequence, now: number): void {
  if (now > s.ms) {
    const at = random10();
    s.ms = now;
    s.high = pool[at]! * 2 ** 32 + pool.readUInt32BE(at + 1);
    s.low = pool[at + 5]! * 2 ** 32 + pool.readUInt32BE(at + 6);
  } else if (++s.low === 2 ** 40) {
    s.low = 0;
    // 2^80 ids in one millisecond cannot happen; the high half wraps rather than overflow.
    s.high = (s.high + 1) % 2 ** 40;
  }
}

const idOf = (prefix: IdPrefix, s: Sequence): string => `${prefix}_${timePart(s.ms)}${fortyBitsOf(s.high)}${fortyBitsOf(s.low)}`;

const thread: Sequence = { ms: -1, high: 0, low: 0 };
/**
 * An id that sorts after every id this thread minted before it (monotonic ULID): within one
 * millisecond, or if the clock steps back, the last id's random part plus one. Audit events are
 * listed newest first by id, and a decision and the execution it starts are written in the same
 * millisecond: with random parts they listed in either order.
 */
export function newMonotonicId(prefix: IdPrefix, now = Date.now()): string {
  advance(thread, now);
  return idOf(prefix, thread);
}

/** How far a stamped id's millisecond may run ahead of its stamp (newStampedId). */
export const STAMPED_ID_LEAD_MS = 2_000;
/** The last millisecond an id's 48 bits hold (a stamp outside [0, this] is minted at the nearer end). */
export const LAST_ID_MS = 2 ** 48 - 1;
const behind: Sequence = { ms: -1, high: 0, low: 0 };
/**
 * The id of a row stamped `at` (its created_at, in ms), minted from the stamp and not from a clock
 * read of its own (a service's clock may be a test's): its millisecond is never before `at` and at
 * most STAMPED_ID_LEAD_MS after it, so a window on the stamp is a range of ids (services/audit/window.ts).
 * It is newMonotonicId's while that stays within the lead; the thread's ids run further ahead only
 * when the clock stepped back, or `at` is an earlier instant than the clock's (a fake clock's, a
 * request that waited). Then the id takes `at`'s own millisecond, monotonic within it: it sorts
 * among the ids of its time, not after every id minted before it.
 */
export function newStampedId(prefix: IdPrefix, at: number): string {
  // A stamp that is no time at all (not a row the service writes) is minted as newMonotonicId's.
  const ms = Number.isNaN(at) ? Date.now() : Math.min(Math.max(at, 0), LAST_ID_MS);
  if (thread.ms - ms <= STAMPED_ID_LEAD_MS) return newMonotonicId(prefix, ms);
  if (behind.ms - ms > STAMPED_ID_LEAD_MS) behind.ms = -1;
  advance(behind, ms);
  return idOf(prefix, behind);
}

/** The lowest id of `prefix` minted at millisecond `ms` or later (every such id sorts at or above it). */
export const firstIdAt = (prefix: IdPrefix, ms: number): string => `${prefix}_${timePart(ms)}`;

const ID_RE = /^[a-z]{2,5}_[0-9a-hjkmnp-tv-z]{26}$/;
/** True when `value` has the shape of an id with this prefix (not whether it exists). */
export function isId(value: string, prefix?: IdPrefix): boolean {
  return ID_RE.test(value) && (prefix === undefined || value.startsWith(prefix + '_'));
}
