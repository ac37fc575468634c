// A failure that a lasting cause repeats (a database outage fails every request and every tick of
// the audit log's loop, thousands a second under load) must not become a log line each.
import type { FastifyBaseLogger } from 'fastify';

/** What tells failures apart by default: the error's code and message. */
const codeAndMessage = (err: unknown): string => (err instanceof Error ? `${(err as { code?: unknown }).code ?? ''}:${err.message}` : String(err));

export interface RepeatedFailureLog {
  (err: unknown): void;
  /** True from a failure until `recovered`. */
  readonly failing: boolean;
  /**
   * Says, once, that the failures have ended (at warn: the level an operator filtering for the
   * outage's error lines still sees), with how many there were and how long they lasted.
   */
  recovered(message: string): void;
}

/**
 * Logs `message` at error level for a failure: the same failure (by `keyOf`) again only after a
 * minute, with how many were not logged meanwhile; another failure at once. Timed on the
 * monotonic clock: a wall clock stepped back would silence it for as long as the step.
 */
export function repeatedFailureLog(log: Pick<FastifyBaseLogger, 'error' | 'warn'>, message: string,
  keyOf: (err: unknown) => string = codeAndMessage, now: () => number = () => performance.now()): RepeatedFailureLog {
  let last = '';
  let at = 0;
  let unlogged = 0;
  let failures = 0;
  let since = 0;
  const fail = (err: unknown) => {
    if (failures++ === 0) since = now();
    const key = keyOf(err);
    if (key === last && now() - at < 60_000) { unlogged++; return; }
    log.error({ err, ...(key === last && unlogged > 0 ? { repeated: unlogged } : {}) }, message);
    last = key;
    at = now();
    unlogged = 0;
  };
  // Defined, not Object.assign'ed: assign copies a getter's value once, and `failing` stayed false.
  Object.defineProperty(fail, 'failing', { get: () => failures > 0 });
  return Object.assign(fail as typeof fail & { readonly failing: boolean }, {
    recovered(said: string) {
      if (failures === 0) return;
      log.warn({ failures, lasted_ms: Math.round(now() - since) }, said);
      failures = 0;
      last = '';
      unlogged = 0;
    },
  });
}
