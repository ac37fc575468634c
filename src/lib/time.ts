// One clock for the service, so tests and simulation can see where time enters.
export interface Clock { now(): Date }
export const systemClock: Clock = { now: () => new Date() };
/** Timestamps are stored and returned as RFC 3339 UTC with milliseconds; they sort as text. */
export const isoNow = (clock: Clock = systemClock): string => clock.now().toISOString();
