// Obligation statuses (docs/approvals.md). Stored: pending, approved, consumed, revoked. Expiry and
// withdrawal are read, never written: a pending or approved obligation past its expires_at *is* expired, with no
// job that has to run for it to stop counting.
export type StoredStatus = 'pending' | 'approved' | 'consumed' | 'revoked';
export type ApprovalStatus = StoredStatus | 'expired' | 'withdrawn';

export const APPROVAL_STATUSES: readonly ApprovalStatus[] = ['pending', 'approved', 'consumed', 'revoked', 'expired', 'withdrawn'];

/**
 * `usable`, where the caller read it: whether the approval's key is live and its owner still an
 * APPROVER member. An approved obligation whose approval is not reads as withdrawn: retiring a key
 * or revoking the role withdraws approvals not yet used, and nothing consumes them (discharge.ts).
 */
export function effectiveStatus(row: { status: string; expires_at: string }, now: Date, usable?: boolean): ApprovalStatus {
  const s = row.status as StoredStatus;
  if ((s === 'pending' || s === 'approved') && Date.parse(row.expires_at) <= now.getTime()) return 'expired';
  if (s === 'approved' && usable === false) return 'withdrawn';
  return s;
}
