// Obligation statuses (docs/approvals.md). Stored: pending, approved, consumed, revoked. Expiry is
// read, never written: a pending or approved obligation past its expires_at *is* expired, with no
// job that has to run for it to stop counting.
export type StoredStatus = 'pending' | 'approved' | 'consumed' | 'revoked';
export type ApprovalStatus = StoredStatus | 'expired';

export const APPROVAL_STATUSES: readonly ApprovalStatus[] = ['pending', 'approved', 'consumed', 'revoked', 'expired'];

export function effectiveStatus(row: { status: string; expires_at: string }, now: Date): ApprovalStatus {
  const s = row.status as StoredStatus;
  if ((s === 'pending' || s === 'approved') && Date.parse(row.expires_at) <= now.getTime()) return 'expired';
  return s;
}
