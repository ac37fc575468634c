// Reason codes a policy evaluation reports (docs/policy-language.md, "Reason codes").

export const POLICY_REASONS = {
  /** Rules matched and their meet is ALLOW. */
  allow: 'policy_allow',
  /** A DENY rule matched. */
  deny: 'policy_deny',
  /** Rules matched and their meet is REQUIRE_APPROVAL. */
  requireApproval: 'policy_require_approval',
  /** No rule matched: default deny. */
  noMatchingRule: 'no_matching_rule',
  /** A money comparison met an amount in another currency and the outcome depended on it. */
  currencyMismatch: 'indeterminate_currency_mismatch',
  /** An input a rule reads was present but malformed, and the outcome depended on it. */
  invalidInput: 'indeterminate_invalid_input',
  /** An input a rule reads was absent, and the outcome depended on it. */
  missingInput: 'indeterminate_missing_input',
} as const;

export type PolicyReasonCode = (typeof POLICY_REASONS)[keyof typeof POLICY_REASONS];

const INDETERMINATE_CAUSES: Readonly<Record<string, string>> = {
  [POLICY_REASONS.currencyMismatch]: 'it compares an amount in another currency than the request\'s',
  [POLICY_REASONS.invalidInput]: 'an input it reads is malformed',
  [POLICY_REASONS.missingInput]: 'an input it reads was not supplied',
};

/**
 * For a decision the policy failed closed on, which rules could not be evaluated and why, so that
 * the caller and the audit record name them (matched_rules holds only rules that matched).
 */
export function indeterminateDetail(result: { reason_code: string; indeterminate_rules: readonly string[] }): string | undefined {
  const cause = INDETERMINATE_CAUSES[result.reason_code];
  const all = result.indeterminate_rules;
  if (cause === undefined || all.length === 0) return undefined;
  // Named up to DETAIL_RULES: a policy may hold 10,000 rules, and this text goes into every answer
  // and audit event of such a decision (1.3 MB each, once).
  const named = all.slice(0, DETAIL_RULES).map((id) => JSON.stringify(id)).join(', ');
  const rest = all.length > DETAIL_RULES ? ` and ${all.length - DETAIL_RULES} more` : '';
  return `indeterminate: ${all.length === 1 ? 'rule' : 'rules'} ${named}${rest} could not be evaluated (${cause}); the policy fails closed`;
}

/** How many undecidable rules a decision's detail names. */
export const DETAIL_RULES = 20;
