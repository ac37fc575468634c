// POST /v1/authorize, orchestrated: verify the permit (cached crypto, live time), evaluate the
// active policy (pure), then in one transaction: the frozen check under lock, live revocation,
// spending of budgets and use counts, the obligation of a REQUIRE_APPROVAL, the decision row and
// its audit event. The answer leaves only after that transaction is durable (invariant 1).
import { checkCoverage, checkPermitTime, liveLimits, type Money, type VerifiedPermit } from '../../domain/permit/index.ts';
import { evaluate } from '../../domain/policy/index.ts';
import { combine, DECISION_REASONS, type Combined } from '../../domain/decision/combine.ts';
import { newId } from '../../lib/ids.ts';
import type { Signer } from '../../signer/signer.ts';
import type { Committer } from '../../store/group-commit.ts';
import type { Store, Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { ensureAgent, lockAgentState } from '../agents/agents.ts';
import { anyRevoked, permitKeyName } from '../permits/permits.ts';
import { getActivePolicy } from '../policy/active.ts';
import { PermitVerificationCache } from './permit-cache.ts';
import { spendLimits } from './spend.ts';
import { checkApproval, consumeApproval } from '../approvals/discharge.ts';
import { sql } from 'kysely';

export interface AuthorizeInput {
  agent: string;
  permit: string;
  action: string;
  resource: string;
  amount?: Money;
  intent?: string;
  /** The obligation an approval discharged (docs/approvals.md); only this one can be consumed. */
  approval_request_id?: string;
}

export interface DecisionRecord {
  decision_id: string;
  decision: 'ALLOW' | 'DENY' | 'REQUIRE_APPROVAL';
  reason_code: string;
  detail?: string;
  policy_version: number | null;
  matched_rules: string[];
  audit_id: string;
  request_id: string;
  approval_request_id?: string;
  permit_commitment: string | null;
}

/** Work other capabilities add inside the decision transaction once the decision is ALLOW. */
export type OnAllow = (trx: Tx, decision: DecisionRecord) => Promise<void>;

export const APPROVAL_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;

export class Authorizer {
  readonly #store: Store;
  readonly #signer: Signer;
  readonly #committer: Committer;
  readonly #cache = new PermitVerificationCache();
  readonly #keys = new Map<string, Uint8Array>();

  constructor(deps: { store: Store; signer: Signer; committer: Committer }) {
    this.#store = deps.store;
    this.#signer = deps.signer;
    this.#committer = deps.committer;
  }

  async #projectKey(projectId: string): Promise<Uint8Array> {
    let key = this.#keys.get(projectId);
    if (!key) {
      key = await this.#signer.publicKey(permitKeyName(projectId));
      this.#keys.set(projectId, key);
    }
    return key;
  }

  /** Checks of the permit that need no store: signatures (cached), time, subject, coverage. */
  async #checkPermit(projectId: string, input: AuthorizeInput, now: Date): Promise<{ permit: VerifiedPermit | null; failure: { check: string; detail: string } | null }> {
    const verified = await this.#cache.verify(input.permit, projectId, await this.#projectKey(projectId));
    if (!verified.ok) return { permit: null, failure: { check: verified.check, detail: `${verified.check}: ${verified.detail}` } };
    const permit = verified.permit;
    if (permit.agent !== input.agent) {
      return { permit, failure: { check: 'subject_mismatch', detail: 'subject_mismatch: the permit was granted to another agent' } };
    }
    const time = checkPermitTime(permit, now);
    if (!time.ok) return { permit, failure: { check: time.check, detail: `${time.check}: ${time.detail}` } };
    const coverage = checkCoverage(permit, { action: input.action, resource: input.resource, ...(input.amount ? { amount: input.amount } : {}) });
    if (!coverage.ok) return { permit, failure: { check: coverage.check, detail: `${coverage.check}: ${coverage.detail}` } };
    return { permit, failure: null };
  }

  async decide(ctx: { projectId: string; actor: string; requestId: string; now: Date }, input: AuthorizeInput, onAllow?: OnAllow): Promise<DecisionRecord> {
    const { projectId, now } = ctx;
    const { permit, failure } = await this.#checkPermit(projectId, input, now);
    const active = await getActivePolicy(this.#store.db, projectId);
    const policy = active
      ? evaluate(active.compiled, {
        action: input.action, resource: input.resource, agent: input.agent,
        ...(input.amount ? { amount: input.amount } : {}),
        request_time: now.getTime(),
        ...(permit ? { delegation_depth: permit.delegation_depth, permit_commitment: permit.commitment } : {}),
      })
      : null;
    const conjuncts = { frozen: false, permitFailure: failure, policy, approvalSatisfied: false };
    const tentative = combine(conjuncts);
    const at = now.toISOString();
    const dialect = this.#store.dialect;

    return this.#committer.run(async (trx) => {
      let combined: Combined = tentative;
      // Frozen: read inside the commit, under a lock a concurrent freeze waits for (invariant 5).
      if (tentative.decision !== 'DENY') await ensureAgent(trx, projectId, input.agent, ctx.actor, at);
      const agent = await lockAgentState(trx, dialect, projectId, input.agent);
      let permitFailure = failure;
      if (!permitFailure && permit && (await anyRevoked(trx, permit.chain))) {
        permitFailure = { check: 'revoked', detail: 'revoked: the permit or one it was delegated from has been revoked' };
      }
      combined = combine({ ...conjuncts, frozen: Boolean(agent?.frozen_at), permitFailure });

      const decisionId = newId('dec');
      // Approvals (docs/approvals.md): a named, approved obligation covering exactly this request
      // satisfies the human-approval condition only; it is consumed (savepoint) and the consumption
      // undone below unless the final decision is ALLOW.
      let approvalRequestId: string | undefined;
      let consumed = false;
      if (combined.decision === 'REQUIRE_APPROVAL' && input.approval_request_id) {
        const check = await checkApproval(trx, projectId, input.approval_request_id, input, now);
        if (check.kind === 'pending') approvalRequestId = input.approval_request_id;
        else if (check.kind === 'unsatisfied') combined = { ...combined, detail: check.detail };
        else {
          await sql`savepoint approval`.execute(trx);
          consumed = await consumeApproval(trx, input.approval_request_id, decisionId, now);
          if (consumed) {
            approvalRequestId = input.approval_request_id;
            combined = combine({ ...conjuncts, frozen: Boolean(agent?.frozen_at), permitFailure, approvalSatisfied: true });
          } else {
            await sql`release savepoint approval`.execute(trx);
            combined = { ...combined, detail: 'approval_not_satisfied: the approval was consumed or revoked by a concurrent request' };
          }
        }
      }

      if (combined.decision !== 'DENY' && permit) {
        // An ALLOW spends; a REQUIRE_APPROVAL only checks that the spend would fit, so no person is
        // asked to approve what the permit's remaining budget or uses would deny anyway.
        const spent = await spendLimits(trx, projectId, liveLimits(permit).counters, input.amount, combined.decision !== 'ALLOW');
        if (!spent.ok) combined = { decision: 'DENY', reason_code: DECISION_REASONS.permitInvalid, detail: spent.detail };
      }
      if (consumed) {
        if (combined.decision !== 'ALLOW') {
          await sql`rollback to savepoint approval`.execute(trx);
          approvalRequestId = undefined;
        }
        await sql`release savepoint approval`.execute(trx);
      }

      if (combined.decision === 'REQUIRE_APPROVAL' && !approvalRequestId) {
        approvalRequestId = newId('apr');
        await trx.insertInto('approval_requests').values({
          id: approvalRequestId, project_id: projectId, decision_id: decisionId, agent: input.agent, action: input.action,
          resource: input.resource, amount_minor: input.amount?.minor ?? null, amount_currency: input.amount?.currency ?? null,
          intent: input.intent ?? null, permit_commitment: permit?.commitment ?? null, policy_version: active!.version,
          matched_rules: JSON.stringify(policy?.matched_rules ?? []), status: 'pending', created_at: at,
          expires_at: new Date(now.getTime() + APPROVAL_REQUEST_TTL_MS).toISOString(),
        }).execute();
      }

      const matched = policy?.matched_rules ?? [];
      const auditId = await recordAudit(trx, {
        projectId, kind: 'decision', actor: ctx.actor, at: now,
        data: {
          decision_id: decisionId, request_id: ctx.requestId, agent: input.agent, action: input.action, resource: input.resource,
          amount: input.amount ?? null, intent: input.intent ?? null, decision: combined.decision, reason_code: combined.reason_code,
          detail: combined.detail ?? null, policy_version: active?.version ?? null, matched_rules: matched,
          permit_commitment: permit?.commitment ?? null, delegation_depth: permit?.delegation_depth ?? 0, request_time: at,
          approval_request_id: approvalRequestId ?? null,
        },
      });
      await sql`insert into decisions (id, project_id, request_id, audit_id, agent, action, resource, amount_minor,
        amount_currency, delegation_depth, permit_commitment, request_time, decision, reason_code, policy_version,
        matched_rules, created_at, intent, approval_request_id)
        values (${decisionId}, ${projectId}, ${ctx.requestId}, ${auditId}, ${input.agent}, ${input.action}, ${input.resource},
        ${input.amount?.minor ?? null}, ${input.amount?.currency ?? null}, ${permit?.delegation_depth ?? 0}, ${permit?.commitment ?? null},
        ${at}, ${combined.decision}, ${combined.reason_code}, ${active?.version ?? null}, ${JSON.stringify(matched)}, ${at},
        ${input.intent ?? null}, ${approvalRequestId ?? null})`.execute(trx);

      const record: DecisionRecord = {
        decision_id: decisionId, decision: combined.decision, reason_code: combined.reason_code,
        ...(combined.detail ? { detail: combined.detail } : {}),
        policy_version: active?.version ?? null, matched_rules: matched, audit_id: auditId, request_id: ctx.requestId,
        ...(approvalRequestId ? { approval_request_id: approvalRequestId } : {}),
        permit_commitment: permit?.commitment ?? null,
      };
      if (record.decision === 'ALLOW' && onAllow) await onAllow(trx, record);
      return record;
    });
  }
}
