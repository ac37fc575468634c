// A failure that a lasting cause repeats (a database outage fails every request and every tick of
// the audit log's loop, thousands a second under load) must not become a log line each.
import type { FastifyBaseLogger } from 'fastify';

/** What tells failures apart by default: the error's code and message. */
const codeAndMessage = (err: unknown): string => (err instanceof Error ? `${(err as { code?: unknown }).code ?? ''}:${err.message}` : String(err));

/**
 * Logs `message` at error level for a failure: the same failure (by `keyOf`) again only after a
 * minute, with how many were not logged meanwhile; another failure at once. Timed on the
 * monotonic clock: a wall clock stepped back would silence it for as long as the step.
 */
export function repeatedFailureLog(log: Pick<FastifyBaseLogger, 'error'>, message: string,
  keyOf: (err: unknown) => string = codeAndMessage, now: () => number = () => performance.now()): (err: unknown) => void {
  let last = '';
  let at = 0;
  let unlogged = 0;
  return (err) => {
    const key = keyOf(err);
    if (key === last && now() - at < 60_000) { unlogged++; return; }
    log.error({ err, ...(key === last && unlogged > 0 ? { repeated: unlogged } : {}) }, message);
    last = key;
    at = now();
    unlogged = 0;
  };
}
