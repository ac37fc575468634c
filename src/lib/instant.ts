// Reading an instant a caller sends. Pure (no clock): the policy domain reads its timestamps here too.

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;

/**
 * Gavel's one reading of an RFC 3339 date-time, for every instant a caller sends: `T` and `Z` in
 * uppercase (RFC 3339 lets a format require that), an offset as `Z` or `±hh:mm` (`-00:00` is UTC),
 * a real calendar date, no leap second (60: Unix time, which every instant here becomes, has none).
 * Epoch milliseconds, a finer fraction truncated; null when the value is not of that form.
 */
export function parseInstant(value: unknown): number | null {
  if (typeof value !== 'string' || value.length > 64) return null;
  const m = RFC3339.exec(value);
  if (m === null) return null;
  const year = Number(m[1]), month = Number(m[2]), day = Number(m[3]);
  const hour = Number(m[4]), minute = Number(m[5]), second = Number(m[6]);
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const daysInMonth = month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  if (day > daysInMonth) return null;
  let offset = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]), om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day); // setUTCFullYear keeps years 0-99 literal
  utc.setUTCHours(hour, minute, second, millis);
  return utc.getTime() - offset;
}

/**
 * parseInstant's instant in whole Unix seconds: the second holding it, or with `up` the first
 * second at or after it, judged by every digit of its fraction (finer than milliseconds too).
 */
export function instantSeconds(value: unknown, up: boolean): number | null {
  const ms = parseInstant(value);
  if (ms === null) return null;
  const seconds = Math.floor(ms / 1000);
  return up && /[1-9]/.test(RFC3339.exec(value as string)![7] ?? '') ? seconds + 1 : seconds;
}

/** True for a date-time parseInstant reads: the HTTP schemas' `date-time` format. */
export const isInstant = (value: unknown): boolean => parseInstant(value) !== null;
