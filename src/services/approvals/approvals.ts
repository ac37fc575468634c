// Obligations and approvals (docs/approvals.md): recording an approval made elsewhere (verified
// signature over the obligation's canonical statement), withdrawing one, and reading them.
// Every change is a conditional update on the obligation's status, audited in its transaction.
import { approvalStatement, effectiveStatus, verifyApproval, type ApprovalStatus, type ObligationFacts } from '../../domain/approval/index.ts';
import { base64urlDecode } from '../../domain/permit/base64url.ts';
import { conflict, invalidRequest, notFound, Problem } from '../../http/problem.ts';
import { newId } from '../../lib/ids.ts';
import { parseJsonExactly } from '../../lib/json-parse.ts';
import type { ApprovalRequestsTable } from '../../store/schema/decisions.ts';
import type { ApprovalsTable } from '../../store/schema/approvals.ts';
import { sql } from 'kysely';
import type { Db, Store, Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { approverEligibility } from './eligibility.ts';

export interface ApprovalView {
  id: string;
  key_id: string;
  approver: string;
  approved_at: string;
  recorded_by: string;
  revoked_at: string | null;
  revoked_by: string | null;
  revoke_reason: string | null;
  consumed_at: string | null;
  consumed_by_decision: string | null;
}

export interface ObligationView {
  id: string;
  status: ApprovalStatus;
  agent: string;
  action: string;
  resource: string;
  amount: { minor: number; currency: string } | null;
  intent: string | null;
  /** The merchant call the request asked for, or null. */
  execution: { merchant: string; operation: string; payload: unknown } | null;
  policy_version: number;
  matched_rules: string[];
  permit_commitment: string | null;
  decision_id: string;
  /** The API key whose request opened it (null before migration 0904). */
  requested_by: string | null;
  created_at: string;
  expires_at: string;
  /** The canonical statement an approver signs (RFC 8785 JSON, UTF-8). */
  statement: string;
  approval: ApprovalView | null;
}

/** The matched rules as stored (JSON text of a string array, written by the decision's commit). */
function recordedRules(text: string): string[] {
  const rules = JSON.parse(text) as unknown;
  if (!Array.isArray(rules) || !rules.every((r) => typeof r === 'string')) throw new Error('approval_requests.matched_rules is not a list of rule ids');
  return rules;
}

export function obligationFacts(r: ApprovalRequestsTable): ObligationFacts {
  return {
    approval_request_id: r.id, project_id: r.project_id, agent: r.agent, action: r.action, resource: r.resource,
    amount: r.amount_minor !== null && r.amount_currency !== null ? { minor: Number(r.amount_minor), currency: r.amount_currency } : null,
    intent: r.intent, execution: r.execution ?? null, policy_version: Number(r.policy_version),
    // Form 2 names the rules (decision 0505); an obligation of form 1 keeps the bytes it was signed over.
    matched_rules: Number(r.statement_version) >= 2 ? recordedRules(r.matched_rules) : null,
    expires_at: r.expires_at,
  };
}

function approvalView(a: ApprovalsTable): ApprovalView {
  return {
    id: a.id, key_id: a.key_id, approver: a.principal_id, approved_at: a.created_at, recorded_by: a.recorded_by,
    revoked_at: a.revoked_at, revoked_by: a.revoked_by, revoke_reason: a.revoke_reason,
    consumed_at: a.consumed_at, consumed_by_decision: a.consumed_by_decision,
  };
}

/**
 * Whether the obligation's approval can still be used: its key live, its owner an enabled member
 * holding APPROVER since before it approved (as eligibility.ts checks when one is consumed). Read beside each row.
 */
const usableApproval = sql<number>`exists (select 1 from approvals a
  join approval_keys k on k.id = a.key_id and k.project_id = a.project_id and k.retired_at is null
  join memberships m on m.project_id = a.project_id and m.principal_id = k.principal_id and m.revoked_at is null
  join principals p on p.id = k.principal_id and p.disabled_at is null
  join role_grants g on g.project_id = a.project_id and g.principal_id = k.principal_id and g.role = 'APPROVER' and g.grant_no <= a.grants_upto
  where a.approval_request_id = approval_requests.id)`;
type ObligationRow = ApprovalRequestsTable & { usable?: number | boolean | null };

export function obligationView(r: ObligationRow, a: ApprovalsTable | undefined, now: Date): ObligationView {
  const facts = obligationFacts(r);
  // Stored by the decision's commit: rules that no longer read are damage, a 500, not an empty list.
  const matched = facts.matched_rules ?? recordedRules(r.matched_rules);
  return {
    id: r.id, status: effectiveStatus(r, now, r.usable === undefined || r.usable === null ? undefined : Boolean(Number(r.usable))), agent: r.agent, action: r.action, resource: r.resource, amount: facts.amount,
    intent: r.intent, execution: facts.execution === null ? null : parseJsonExactly(facts.execution), policy_version: facts.policy_version, matched_rules: matched, permit_commitment: r.permit_commitment,
    decision_id: r.decision_id, requested_by: r.requested_by, created_at: r.created_at, expires_at: r.expires_at,
    statement: approvalStatement(facts).text, approval: a ? approvalView(a) : null,
  };
}

async function load(db: Db | Tx, projectId: string, id: string): Promise<{ row: ObligationRow; approval: ApprovalsTable | undefined }> {
  const row = await db.selectFrom('approval_requests').selectAll().select(usableApproval.as('usable')).where('project_id', '=', projectId).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound(`no approval request ${id} in this project`);
  const approval = await db.selectFrom('approvals').selectAll().where('approval_request_id', '=', id).executeTakeFirst();
  return { row, approval };
}

/** The 409 for an obligation that is not in the state an operation needs. */
function stateConflict(status: ApprovalStatus, id: string): Problem {
  switch (status) {
    case 'approved': return conflict(`approval request ${id} is already approved`, 'already_approved');
    case 'consumed': return conflict(`the approval of ${id} has been consumed; an approval is single-use`, 'approval_consumed');
    case 'withdrawn': return conflict(`the approval of ${id} was withdrawn (revoked)`, 'approval_withdrawn');
    case 'expired': return conflict(`approval request ${id} has expired`, 'approval_request_expired');
    case 'pending': return conflict(`approval request ${id} has no approval yet`, 'not_approved');
    // Not raised today: recording and revoking read the stored status (a lapsed approval may still be revoked).
    case 'lapsed': return conflict(`the approval of ${id} lapsed (its key retired, or its approver no longer one)`, 'approval_lapsed');
  }
}

export async function getObligation(db: Db, projectId: string, id: string, now: Date): Promise<ObligationView> {
  // The console may name an obligation by its own id or by its approval's id.
  let requestId = id;
  if (id.startsWith('apv_')) {
    const a = await db.selectFrom('approvals').select('approval_request_id').where('project_id', '=', projectId).where('id', '=', id).executeTakeFirst();
    if (!a) throw notFound(`no approval ${id} in this project`);
    requestId = a.approval_request_id;
  }
  const { row, approval } = await load(db, projectId, requestId);
  return obligationView(row, approval, now);
}

export async function listObligations(db: Db, projectId: string, q: { before?: string; limit: number; status?: ApprovalStatus; agent?: string }, now: Date): Promise<ObligationView[]> {
  const at = now.toISOString();
  let query = db.selectFrom('approval_requests').selectAll().select(usableApproval.as('usable')).where('project_id', '=', projectId);
  if (q.before) query = query.where('id', '<', q.before);
  if (q.agent) query = query.where('agent', '=', q.agent);
  if (q.status === 'expired') query = query.where('status', 'in', ['pending', 'approved']).where('expires_at', '<=', at);
  else if (q.status === 'approved') query = query.where('status', '=', 'approved').where('expires_at', '>', at).where(sql<boolean>`${usableApproval}`);
  else if (q.status === 'lapsed') query = query.where('status', '=', 'approved').where('expires_at', '>', at).where(sql<boolean>`not ${usableApproval}`);
  else if (q.status === 'pending') query = query.where('status', '=', q.status).where('expires_at', '>', at);
  else if (q.status) query = query.where('status', '=', q.status);
  const rows = await query.orderBy('id', 'desc').limit(q.limit).execute();
  const ids = rows.map((r) => r.id);
  const approvals = ids.length ? await db.selectFrom('approvals').selectAll().where('approval_request_id', 'in', ids).execute() : [];
  const byRequest = new Map(approvals.map((a) => [a.approval_request_id, a]));
  return rows.map((r) => obligationView(r, byRequest.get(r.id), now));
}

/**
 * `caller`: the principal of the API key relaying the approval, and whether that key may read every
 * approval key and member (ADMIN or AUDITOR). Why a key cannot approve is told to it, or to the
 * key's owner; any other caller gets one answer for every reason (decision 0502, last addendum).
 */
export interface RecordApprovalInput { projectId: string; approvalRequestId: string; keyId: string; signature: string; actor: string; caller: { principalId: string; readsApprovalKeys: boolean } }

/** The 422 for a key that cannot approve: its reason if the caller may read it, else one for every reason. */
function keyRefusal(input: RecordApprovalInput, owner: string | undefined, code: string, detail: string): Problem {
  if (input.caller.readsApprovalKeys || (owner !== undefined && owner === input.caller.principalId)) return new Problem(422, code, detail);
  return new Problem(422, 'approval_key_cannot_approve', `approval key ${input.keyId} cannot approve this obligation: it is unknown in this project or retired, its owner is not a member holding APPROVER, or its owner holds or minted the API key that made the request; a key of ADMIN or AUDITOR, or of the approval key's owner, is told which`);
}

export async function recordApproval(store: Store, input: RecordApprovalInput, now: Date): Promise<ObligationView> {
  const signature = base64urlDecode(input.signature);
  if (!signature || signature.length !== 64) {
    throw invalidRequest([{ pointer: '/signature', code: 'malformed_signature', message: 'signature must be a 64-byte Ed25519 signature, base64url without padding' }]);
  }
  const at = now.toISOString();
  return store.transaction(async (trx) => {
    const { row } = await load(trx, input.projectId, input.approvalRequestId);
    // The state first: no signature or key can change it, and every caller of this route may read it
    // (GET …/approvals takes any key of the project), so a 409 tells it nothing it may not know
    // (decision 0502, last addendum).
    const status = effectiveStatus(row, now);
    if (status !== 'pending') throw stateConflict(status, row.id);
    const eligible = await approverEligibility(trx, input.projectId, input.keyId, undefined, store.dialect === 'postgres');
    if (!eligible.ok) throw keyRefusal(input, eligible.owner, eligible.code, eligible.detail);
    // Four eyes: whoever holds the API key that asked cannot be the person who approves. Two hold a
    // key's secret: its principal, and whoever minted it (an ADMIN may mint for another principal).
    if (row.requested_by !== null) {
      const requester = await trx.selectFrom('api_keys').select(['principal_id', 'created_by']).where('id', '=', row.requested_by).executeTakeFirst();
      if (requester && (requester.principal_id === eligible.principalId || requester.created_by === eligible.principalId)) {
        const how = requester.principal_id === eligible.principalId ? 'holds' : 'minted';
        throw keyRefusal(input, eligible.principalId, 'self_approval', `${eligible.principalId} ${how} the API key that made this request (${row.requested_by}) and cannot approve it; another APPROVER must`);
      }
    }
    const publicKey = base64urlDecode(eligible.publicKey)!;
    if (!verifyApproval(publicKey, obligationFacts(row), signature)) {
      throw new Problem(422, 'signature_invalid', 'the signature does not verify over this obligation\'s statement with this key (GET the approval request for the exact statement)');
    }
    const updated = await trx.updateTable('approval_requests').set({ status: 'approved' })
      .where('id', '=', row.id).where('status', '=', 'pending').where('expires_at', '>', at).executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) throw conflict(`approval request ${row.id} is already approved`, 'already_approved');
    const approval: ApprovalsTable = {
      id: newId('apv'), project_id: input.projectId, approval_request_id: row.id, key_id: input.keyId, principal_id: eligible.principalId,
      signature: input.signature, recorded_by: input.actor, created_at: at,
      revoked_at: null, revoked_by: null, revoke_reason: null, consumed_at: null, consumed_by_decision: null,
      grants_upto: eligible.lastGrant,
    };
    await trx.insertInto('approvals').values(approval).execute();
    await recordAudit(trx, {
      projectId: input.projectId, kind: 'approval.recorded', actor: input.actor, at: now,
      data: { approval_id: approval.id, approval_request_id: row.id, key_id: input.keyId, approver: eligible.principalId, signature: input.signature, statement: approvalStatement(obligationFacts(row)).text },
    });
    // Usable: the key's eligibility was checked above, in this transaction (the row was read before the approval existed).
    return obligationView({ ...row, status: 'approved', usable: true }, approval, now);
  });
}

export async function revokeApproval(store: Store, input: { projectId: string; approvalRequestId: string; reason?: string; actor: string }, now: Date): Promise<ObligationView> {
  const at = now.toISOString();
  return store.transaction(async (trx) => {
    const { row, approval } = await load(trx, input.projectId, input.approvalRequestId);
    const status = effectiveStatus(row, now);
    if (status !== 'approved' || !approval) throw stateConflict(status, row.id);
    // Races consumption on the same condition: exactly one of them changes the row.
    const updated = await trx.updateTable('approval_requests').set({ status: 'withdrawn' })
      .where('id', '=', row.id).where('status', '=', 'approved').executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) {
      const now2 = await load(trx, input.projectId, row.id);
      throw stateConflict(effectiveStatus(now2.row, now), row.id);
    }
    const revoked = { ...approval, revoked_at: at, revoked_by: input.actor, revoke_reason: input.reason ?? null };
    await trx.updateTable('approvals').set({ revoked_at: at, revoked_by: input.actor, revoke_reason: input.reason ?? null }).where('id', '=', approval.id).execute();
    await recordAudit(trx, {
      projectId: input.projectId, kind: 'approval.revoked', actor: input.actor, at: now,
      data: { approval_id: approval.id, approval_request_id: row.id, reason: input.reason ?? null },
    });
    return obligationView({ ...row, status: 'withdrawn' }, revoked, now);
  });
}
