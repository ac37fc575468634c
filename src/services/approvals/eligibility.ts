// Who may approve: a live approval key whose owner is a current, enabled member of the project
// holding APPROVER. Checked when an approval is recorded and again when one is consumed, so
// retiring a key or revoking a role withdraws approvals not yet used, for good: at consumption the
// APPROVER grant must be older than the approval, so granting the role again revives nothing. Older
// is told by grant numbers, not clocks: the approval records its approver's last_grant, and a grant
// made after it is numbered higher (decision 0201, addendum). The same rule, as SQL, makes a listed
// approval read as lapsed (usableApproval in approvals.ts): change them together.
import type { Db, Tx } from '../../store/store.ts';

/** `owner`: the key's principal, when the key exists. */
export type Eligibility = { ok: true; principalId: string; publicKey: string; lastGrant: number } | { ok: false; code: 'approval_key_unknown' | 'approval_key_retired' | 'approver_not_eligible'; detail: string; owner?: string };

/**
 * `grantsUpto`: the approver's last_grant recorded with the approval being consumed (absent while
 * recording one, which records the `lastGrant` answered here).
 * `lockRows` (PostgreSQL, recording and consumption): the rows read are held FOR SHARE until the
 * transaction commits, so a retire, role revocation or member removal either committed before them
 * (read here) or waits for it: none answers while a decision that read the approval as usable can
 * still commit an ALLOW, or a recording can still answer 201 "approved" for an approval it lapsed.
 * A grant numbers itself on the membership row, so it too committed before (its number read here)
 * or waits. Every holder takes key, membership (with its principal), grant in that order, and a
 * removal or a grant writes membership then grants: no cycle (test/approvals/revoke-race.test.ts).
 */
export async function approverEligibility(db: Db | Tx, projectId: string, keyId: string, grantsUpto?: number, lockRows = false): Promise<Eligibility> {
  const key = await db.selectFrom('approval_keys').selectAll().where('project_id', '=', projectId).where('id', '=', keyId)
    .$if(lockRows, (q) => q.forShare()).executeTakeFirst();
  if (!key) return { ok: false, code: 'approval_key_unknown', detail: `no approval key ${keyId} in this project` };
  const owner = key.principal_id;
  if (key.retired_at) return { ok: false, code: 'approval_key_retired', detail: `approval key ${keyId} was retired at ${key.retired_at}`, owner };
  const member = await db.selectFrom('memberships as m').innerJoin('principals as p', 'p.id', 'm.principal_id')
    .select(['m.revoked_at', 'm.last_grant', 'p.disabled_at']).where('m.project_id', '=', projectId).where('m.principal_id', '=', key.principal_id)
    .$if(lockRows, (q) => q.forShare()).executeTakeFirst();
  if (!member || member.revoked_at || member.disabled_at) {
    return { ok: false, code: 'approver_not_eligible', detail: `the owner of approval key ${keyId} is no longer a member of this project`, owner };
  }
  const grant = await db.selectFrom('role_grants').select(['granted_at', 'grant_no'])
    .where('project_id', '=', projectId).where('principal_id', '=', key.principal_id).where('role', '=', 'APPROVER')
    .$if(lockRows, (q) => q.forShare()).executeTakeFirst();
  if (!grant) return { ok: false, code: 'approver_not_eligible', detail: `the owner of approval key ${keyId} does not hold APPROVER`, owner };
  if (grantsUpto !== undefined && grant.grant_no > grantsUpto) {
    return { ok: false, code: 'approver_not_eligible', detail: `the owner of approval key ${keyId} lost APPROVER after approving (held again since ${grant.granted_at}); the approval stays lapsed`, owner };
  }
  return { ok: true, principalId: key.principal_id, publicKey: key.public_key, lastGrant: member.last_grant };
}
