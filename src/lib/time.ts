// One clock for the service, so tests and simulation can see where time enters.
export interface Clock { now(): Date }
export const systemClock: Clock = { now: () => new Date() };
/** The first instant whose ISO string has a four-digit year (0000-01-01T00:00:00.000Z). */
export const FIRST_ISO_INSTANT = -62_167_219_200_000;
/** The last instant whose ISO string has a four-digit year (later ones are "+010000-…" and sort first as text). */
export const LAST_ISO_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** Timestamps are stored and returned as RFC 3339 UTC with milliseconds; they sort as text. */
export const isoNow = (clock: Clock = systemClock): string => toIso(clock.now());

// Date.prototype.toISOString formats through snprintf (about 0.5 µs here), and a decision stamps
// its plan and its event; at thousands of requests a second most share their millisecond.
let lastMs = NaN;
let lastIso = '';
/** date.toISOString(), remembered for the last millisecond asked (an invalid date still throws). */
export function toIso(date: Date): string {
  const ms = date.getTime();
  if (ms !== lastMs) { lastIso = date.toISOString(); lastMs = ms; }
  return lastIso;
}
