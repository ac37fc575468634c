// The time-dependent half of verification, run on every use (also after a cache hit).
import type { PermitFailure, VerifiedPermit } from './types.ts';
import { fail } from './types.ts';

/** Valid when not_before <= now < expires_at (Unix seconds, no leeway: one clock decides). */
export function checkPermitTime(permit: VerifiedPermit, now: Date): { ok: true } | PermitFailure {
  const ms = now instanceof Date ? now.getTime() : Number.NaN;
  if (!Number.isFinite(ms)) return fail('time_invalid', 'the verification time is not a valid date');
  if (ms < permit.not_before * 1000) return fail('not_yet_valid', `the permit is not valid before ${new Date(permit.not_before * 1000).toISOString()}`);
  if (ms >= permit.expires_at * 1000) return fail('expired', `the permit expired at ${new Date(permit.expires_at * 1000).toISOString()}`);
  return { ok: true };
}
