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
