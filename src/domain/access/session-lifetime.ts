// When a console session ends by itself. Pure: times in, verdict out.

export interface SessionLifetimes { idleMs: number; absoluteMs: number }
/** 30 minutes idle, 12 hours absolute (OWASP Session Management: low-risk admin consoles). */
export const SESSION_LIFETIMES: SessionLifetimes = { idleMs: 30 * 60_000, absoluteMs: 12 * 60 * 60_000 };

export type SessionVerdict = 'active' | 'idle_expired' | 'absolute_expired' | 'ended';

export function sessionVerdict(s: { last_seen_at: string; expires_at: string; ended_at: string | null }, now: Date, lifetimes: SessionLifetimes = SESSION_LIFETIMES): SessionVerdict {
  if (s.ended_at) return 'ended';
  const t = now.getTime();
  if (t >= Date.parse(s.expires_at)) return 'absolute_expired';
  // A last use as far in the future as the idle lifetime: the clock stepped back since (an NTP
  // correction), and how long the session has been idle cannot be told. Ended, rather than kept
  // alive until the clock reaches that use again (an hour's step, an hour more for an abandoned session).
  if (Math.abs(t - Date.parse(s.last_seen_at)) >= lifetimes.idleMs) return 'idle_expired';
  return 'active';
}
