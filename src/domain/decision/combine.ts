// The final decision is the meet of its conjuncts (spec 4.1 rule 4): the frozen check, the permit,
// the policy, and the human-approval condition. DENY absorbs; the reason names the strongest cause.
import { meet, type Effect } from '../policy/index.ts';

export type Decision = Effect;

export interface Conjuncts {
  frozen: boolean;
  /**
   * A frozen agent the permit chain was delegated by, if any: a frozen agent's grants stop with it
   * (a delegate it made, before or after the freeze, acts for it).
   */
  frozenDelegator?: string | undefined;
  /** null when the permit verified and covers the request; else the failed check. */
  permitFailure: { check: string; detail: string } | null;
  /** null when there is no active policy; `detail` says why it failed closed, when it did. */
  policy: { decision: Effect; reason_code: string; detail?: string | undefined } | null;
  /** True when a live approval discharges a REQUIRE_APPROVAL from the policy. */
  approvalSatisfied: boolean;
}

export interface Combined {
  decision: Decision;
  reason_code: string;
  detail?: string;
}

export const DECISION_REASONS = {
  frozen: 'agent_frozen',
  permitInvalid: 'permit_invalid',
  noActivePolicy: 'no_active_policy',
  /** The active version is damaged in storage: the policy conjunct fails closed (decision 0152, addendum). */
  policyIntegrity: 'policy_integrity',
  approvalGranted: 'approval_granted',
} as const;

export function combine(c: Conjuncts): Combined {
  // Precedence among DENY causes: frozen, then permit, then policy (most specific to the agent first).
  if (c.frozen) return { decision: 'DENY', reason_code: DECISION_REASONS.frozen, detail: 'the agent is frozen; nothing it presents authorizes' };
  if (c.frozenDelegator !== undefined) {
    return { decision: 'DENY', reason_code: DECISION_REASONS.frozen, detail: `the permit was delegated by ${c.frozenDelegator}, which is frozen; nothing a frozen agent granted authorizes until it is released` };
  }
  if (c.permitFailure) return { decision: 'DENY', reason_code: DECISION_REASONS.permitInvalid, detail: c.permitFailure.detail };
  if (!c.policy) return { decision: 'DENY', reason_code: DECISION_REASONS.noActivePolicy, detail: 'the project has no active policy' };
  // The permit conjunct is ALLOW here (the identity of the meet).
  let decision = meet('ALLOW', c.policy.decision);
  let reason = c.policy.reason_code;
  // An approval satisfies only the human-approval condition: REQUIRE_APPROVAL becomes ALLOW, and
  // nothing else changes (spec 4.1 rule 5: it grants no authority).
  if (decision === 'REQUIRE_APPROVAL' && c.approvalSatisfied) {
    decision = 'ALLOW';
    reason = DECISION_REASONS.approvalGranted;
  }
  return decision === 'DENY' && c.policy.detail !== undefined ? { decision, reason_code: reason, detail: c.policy.detail } : { decision, reason_code: reason };
}
