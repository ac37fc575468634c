// When a console session ends by itself. Pure: times in, verdict out.

export interface SessionLifetimes { idleMs: number; absoluteMs: number }
/** 30 minutes idle, 12 hours absolute (OWASP Session Management: low-risk admin consoles). */
export const SESSION_LIFETIMES: SessionLifetimes = { idleMs: 30 * 60_000, absoluteMs: 12 * 60 * 60_000 };

export type SessionVerdict = 'active' | 'idle_expired' | 'absolute_expired' | 'ended';

/**
 * The instants between which a session is active at `now` (each bound exclusive, in ms): its
 * absolute end must lie after `now`, and its last use less than the idle lifetime from `now`, either
 * way. A last use as far in the future as the idle lifetime: the clock stepped back since (an NTP
 * correction), and how long the session has been idle cannot be told. Ended, rather than kept alive
 * until the clock reaches that use again (an hour's step, an hour more for an abandoned session).
 * One rule for `sessionVerdict` and for counting live sessions in SQL (services/identity/control-plane.ts).
 */
export function activeSessionBounds(now: Date, lifetimes: SessionLifetimes = SESSION_LIFETIMES): { expiresAfter: number; lastSeenAfter: number; lastSeenBefore: number } {
  const t = now.getTime();
  return { expiresAfter: t, lastSeenAfter: t - lifetimes.idleMs, lastSeenBefore: t + lifetimes.idleMs };
}

export function sessionVerdict(s: { last_seen_at: string; expires_at: string; ended_at: string | null }, now: Date, lifetimes: SessionLifetimes = SESSION_LIFETIMES): SessionVerdict {
  if (s.ended_at) return 'ended';
  const bounds = activeSessionBounds(now, lifetimes);
  if (!(Date.parse(s.expires_at) > bounds.expiresAfter)) return 'absolute_expired';
  const lastSeen = Date.parse(s.last_seen_at);
  if (!(lastSeen > bounds.lastSeenAfter && lastSeen < bounds.lastSeenBefore)) return 'idle_expired';
  return 'active';
}
