// Obligation statuses (docs/approvals.md). Stored: pending, approved, consumed, withdrawn (by revoke,
// the spec's name, section 3). Expiry and lapse are read, never written: a pending or approved obligation past its expires_at *is* expired, with no
// job that has to run for it to stop counting.
export type StoredStatus = 'pending' | 'approved' | 'consumed' | 'withdrawn';
export type ApprovalStatus = StoredStatus | 'expired' | 'lapsed';

export const APPROVAL_STATUSES: readonly ApprovalStatus[] = ['pending', 'approved', 'consumed', 'withdrawn', 'expired', 'lapsed'];

/**
 * `usable`, where the caller read it: whether the approval's key is live and its owner still an
 * APPROVER member. An approved obligation whose approval is not reads as lapsed: retiring a key
 * or revoking the role lapses approvals not yet used, and nothing consumes them (discharge.ts).
 */
export function effectiveStatus(row: { status: string; expires_at: string }, now: Date, usable?: boolean): ApprovalStatus {
  const s = row.status as StoredStatus;
  if ((s === 'pending' || s === 'approved') && Date.parse(row.expires_at) <= now.getTime()) return 'expired';
  if (s === 'approved' && usable === false) return 'lapsed';
  return s;
}
