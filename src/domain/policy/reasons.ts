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
 * the caller and the audit record name them (matched_rules holds only rules that matched). Only the
 * rules that could have changed the decision are named (`failed_closed_on`), each beside its own
 * cause; without that list (a caller holding only the ids), every indeterminate rule, with the
 * reason's cause.
 */
export function indeterminateDetail(result: { reason_code: string; indeterminate_rules: readonly string[]; failed_closed_on?: readonly { id: string; cause: string }[] }): string | undefined {
  if (INDETERMINATE_CAUSES[result.reason_code] === undefined) return undefined;
  const rules = result.failed_closed_on ?? result.indeterminate_rules.map((id) => ({ id, cause: result.reason_code }));
  if (rules.length === 0) return undefined;
  // Named up to DETAIL_RULES: a policy may hold 10,000 rules, and this text goes into every answer
  // and audit event of such a decision (1.3 MB each, once). Grouped by cause, the reason's first.
  const named = rules.slice(0, DETAIL_RULES);
  const more = rules.length - named.length;
  const oneCause = rules.every((r) => r.cause === result.reason_code);
  const groups: string[] = [];
  for (const cause of new Set([result.reason_code, ...named.map((r) => r.cause)])) {
    const ids = named.filter((r) => r.cause === cause).map((r) => JSON.stringify(r.id));
    if (ids.length === 0) continue;
    const tail = oneCause && more > 0 ? ` and ${more} more` : '';
    groups.push(`${ids.length + (tail ? more : 0) === 1 ? 'rule' : 'rules'} ${ids.join(', ')}${tail} could not be evaluated (${INDETERMINATE_CAUSES[cause] ?? 'it could not be evaluated'})`);
  }
  if (!oneCause && more > 0) groups.push(`${more} more could not be evaluated either`);
  return `indeterminate: ${groups.join('; ')}; the policy fails closed`;
}

/** How many undecidable rules a decision's detail names. */
export const DETAIL_RULES = 20;
