// The decision's transaction (a writer procedure: plain data in, plain data out, so on SQLite it
// runs on the writer thread). Everything here must be read or written under the commit: the frozen
// check under lock, live revocation, spending of budgets and use counts, the approval discharge,
// the obligation of a REQUIRE_APPROVAL, the decision's audit event (its one record), and the execution's
// nonce reservation. The caller's answer leaves only once this transaction is durable (invariant 1).
import { sql } from 'kysely';
import type { LiveCounter } from '../../domain/permit/index.ts';
import type { Effect } from '../../domain/policy/index.ts';
import { combine, DECISION_REASONS, type Combined, type Conjuncts } from '../../domain/decision/combine.ts';
import { newId, newMonotonicId } from '../../lib/ids.ts';
import type { Tx } from '../../store/store.ts';
import type { SqlTarget } from '../../store/fixed-sql.ts';
import { epochStillCurrent, type ReadTag } from '../../store/read-epoch.ts';
import { lockAgentForDecision } from './recheck.ts';
import { STATEMENT_VERSION } from '../../domain/approval/index.ts';
import { CanonicalJson, recordAudit, type AuditInput } from '../audit/record.ts';
import { canonicalDecisionData } from '../../domain/decision/event.ts';
import { ensureAgent, firstFrozen, lockAgentState } from '../agents/agents.ts';
import { anyRevoked } from '../permits/permits.ts';
import { checkApproval, consumeApproval } from '../approvals/discharge.ts';
import { refuseTakenNonce, reserveExecution, type ExecutionReservation } from '../executions/reserve.ts';
import { spendLimits } from './spend.ts';
import type { AuthorizeInput, DecisionRecord } from './authorize.ts';

export const APPROVAL_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;

/** What the decision needs from outside the transaction: verified, evaluated, plain data. */
export interface DecisionPlan {
  projectId: string;
  actor: string;
  requestId: string;
  /** The decision's time (ISO 8601): every member of a plan is a JSON value (writer/wire.ts). */
  at: string;
  /** The request, without the permit itself (verified already; its commitment travels below). */
  input: Omit<AuthorizeInput, 'permit'>;
  /**
   * The permit check that failed before the transaction (signature, time, coverage), if any; when
   * the permit did not verify, `presented` is the SHA-256 of its last link, recorded as its commitment.
   */
  failure: { check: string; detail: string; presented?: string } | null;
  /** `delegators`: the agents that delegated along the chain, root's subject first (empty for a root permit). */
  permit: { commitment: string; chain: string[]; delegation_depth: number; delegators: string[]; counters: LiveCounter[] } | null;
  /** `detail`: set when the policy failed closed, naming the rules it could not evaluate. */
  policy: { decision: Effect; reason_code: string; matched_rules: string[]; detail?: string } | null;
  policyVersion: number | null;
  /** Reserved (and audited) with the decision when it is ALLOW; a taken nonce rolls it all back. */
  execution?: ExecutionReservation;
  /**
   * Set when the API key context and policy pointer came from caches: the SQLite read epoch they
   * were taken under, or CHECKED_AT_COMMIT on PostgreSQL (store/read-epoch.ts, ./recheck.ts).
   */
  epoch?: ReadTag;
}

export async function commitDecision(trx: Tx, plan: DecisionPlan, env: SqlTarget): Promise<DecisionRecord> {
  const { projectId, input, permit, policy, at } = plan;
  // First, before anything is written: the caller's cached API key context and policy pointer
  // (on PostgreSQL, in the statement that locks the agent, below).
  if (typeof plan.epoch === 'number') await epochStillCurrent(trx, env, plan.epoch);
  const now = new Date(at);
  const conjuncts: Conjuncts = { frozen: false, permitFailure: plan.failure, policy, approvalSatisfied: false };
  const tentative = combine(conjuncts);
  // Frozen: read inside the commit, under a lock a concurrent freeze waits for (invariant 5).
  // A known agent (the usual case) takes one statement, which also checks the permit chain for
  // revocation, live (recheck.ts); a new one is created first when the decision may not be a
  // DENY, then locked like any other, and its chain checked by a statement of its own.
  const chain = !plan.failure && permit && permit.chain.length > 0 ? permit.chain : null;
  let agent: { frozen_at: string | null; revoked?: boolean | undefined } | undefined = await lockAgentForDecision(trx, env, plan, input.agent, chain);
  if (!agent && tentative.decision !== 'DENY') {
    await ensureAgent(trx, projectId, input.agent, plan.actor, at, null, env);
    agent = await lockAgentState(trx, env, projectId, input.agent);
  }
  // A delegated permit acts for every agent that delegated it: one of them frozen stops it too, read
  // under the same kind of lock as the agent's own state (a freeze waits for this decision).
  const frozenDelegator = permit && permit.delegators.length > 0
    ? await firstFrozen(trx, env, projectId, permit.delegators, tentative.decision === 'DENY' ? null : { actor: plan.actor, at })
    : undefined;
  let permitFailure = plan.failure;
  const revoked = chain && (agent?.revoked ?? (await anyRevoked(trx, chain, env)));
  if (revoked) {
    permitFailure = { check: 'revoked', detail: 'revoked: the permit or one it was delegated from has been revoked' };
  }
  const frozen = Boolean(agent?.frozen_at);
  let combined: Combined = combine({ ...conjuncts, frozen, frozenDelegator, permitFailure });

  const decisionId = newId('dec');
  // Approvals (docs/approvals.md): a named, approved obligation covering exactly this request
  // satisfies the human-approval condition only; it is consumed (savepoint) and the consumption
  // undone below unless the final decision is ALLOW.
  let approvalRequestId: string | undefined;
  let consumed = false;
  if (combined.decision === 'REQUIRE_APPROVAL' && input.approval_request_id) {
    const check = await checkApproval(trx, env.dialect, projectId, input.approval_request_id, { ...input, execution: plan.execution?.call ?? null, policy_version: plan.policyVersion, matched_rules: policy?.matched_rules ?? [] }, now);
    if (check.kind === 'pending') approvalRequestId = input.approval_request_id;
    else if (check.kind === 'unsatisfied') combined = { ...combined, detail: check.detail };
    else {
      await sql`savepoint approval`.execute(trx);
      consumed = await consumeApproval(trx, input.approval_request_id, decisionId, now);
      if (consumed) {
        approvalRequestId = input.approval_request_id;
        combined = combine({ ...conjuncts, frozen, frozenDelegator, permitFailure, approvalSatisfied: true });
      } else {
        await sql`release savepoint approval`.execute(trx);
        combined = { ...combined, detail: 'approval_not_satisfied: the approval was consumed or revoked by a concurrent request' };
      }
    }
  }

  if (combined.decision !== 'DENY' && permit) {
    // An ALLOW spends; a REQUIRE_APPROVAL only checks that the spend would fit, so no person is
    // asked to approve what the permit's remaining budget or uses would deny anyway.
    const spent = await spendLimits(trx, projectId, permit.counters, input.amount, permit.chain.length, combined.decision !== 'ALLOW');
    if (!spent.ok) combined = { decision: 'DENY', reason_code: DECISION_REASONS.permitInvalid, detail: spent.detail };
  }
  if (consumed) {
    if (combined.decision !== 'ALLOW') {
      await sql`rollback to savepoint approval`.execute(trx);
      approvalRequestId = undefined;
    }
    await sql`release savepoint approval`.execute(trx);
  }
  // A pending obligation the request named stays pending, but a DENY (the permit's remaining budget
  // or uses would refuse it) names no obligation: only REQUIRE_APPROVAL and the ALLOW consuming one do.
  if (combined.decision === 'DENY') approvalRequestId = undefined;

  if (combined.decision === 'REQUIRE_APPROVAL' && !approvalRequestId) {
    approvalRequestId = newMonotonicId('apr');
    await trx.insertInto('approval_requests').values({
      id: approvalRequestId, project_id: projectId, decision_id: decisionId, agent: input.agent, action: input.action,
      resource: input.resource, amount_minor: input.amount?.minor ?? null, amount_currency: input.amount?.currency ?? null,
      intent: input.intent ?? null, permit_commitment: permit?.commitment ?? null, policy_version: plan.policyVersion!,
      matched_rules: JSON.stringify(policy?.matched_rules ?? []), execution: plan.execution?.call ?? null, requested_by: plan.actor, statement_version: STATEMENT_VERSION, status: 'pending', created_at: at,
      expires_at: new Date(now.getTime() + APPROVAL_REQUEST_TTL_MS).toISOString(),
    }).execute();
  }

  const { event, record: unrecorded } = decisionEvent(plan, combined, decisionId, approvalRequestId);
  const record: DecisionRecord = { ...unrecorded, audit_id: await recordAudit(trx, event, env) };
  if (record.decision === 'ALLOW' && plan.execution) await reserveExecution(trx, plan.execution, record, { projectId, actor: plan.actor, now }, env);
  else if (plan.execution) await refuseTakenNonce(trx, plan.execution, projectId, env);
  return record;
}

/** The decision's audit event (its one record) and the answer, once its outcome is final. */
export function decisionEvent(plan: DecisionPlan, combined: Combined, decisionId: string, approvalRequestId: string | undefined): { event: AuditInput; record: Omit<DecisionRecord, 'audit_id'> } {
  const { input, permit, at } = plan;
  const matched = plan.policy?.matched_rules ?? [];
  const event: AuditInput = {
    projectId: plan.projectId, kind: 'decision', actor: plan.actor, at,
    data: new CanonicalJson(canonicalDecisionData({
      decision_id: decisionId, request_id: plan.requestId, agent: input.agent, action: input.action, resource: input.resource,
      amount: input.amount ? { minor: input.amount.minor, currency: input.amount.currency } : null, intent: input.intent ?? null,
      decision: combined.decision, reason_code: combined.reason_code,
      detail: combined.detail ?? null, policy_version: plan.policyVersion, matched_rules: matched,
      ...(plan.execution ? { execution: { merchant: plan.execution.merchant, operation: plan.execution.operation, nonce: plan.execution.nonce } } : {}),
      permit_commitment: permit?.commitment ?? plan.failure?.presented ?? null, delegation_depth: permit?.delegation_depth ?? 0, request_time: at,
      approval_request_id: approvalRequestId ?? null,
    })),
  };
  const record = {
    decision_id: decisionId, decision: combined.decision, reason_code: combined.reason_code,
    ...(combined.detail ? { detail: combined.detail } : {}),
    policy_version: plan.policyVersion, matched_rules: matched, request_id: plan.requestId,
    ...(approvalRequestId ? { approval_request_id: approvalRequestId } : {}),
    permit_commitment: permit?.commitment ?? plan.failure?.presented ?? null,
  };
  return { event, record };
}
