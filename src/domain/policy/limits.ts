// Bounds that keep a policy document from being a denial of service, both when it is
// validated and when it is evaluated on every authorization. Validation checks all of them.

export const POLICY_LIMITS = {
  /** Rules in one document (the benchmark runs 10,000). */
  maxRules: 10_000,
  /** Nesting of conditions: `when` itself is depth 1. */
  maxDepth: 32,
  /** Arguments of one and/or. */
  maxArgs: 100,
  /** Elements of one in/not_in list. */
  maxListSize: 1_000,
  /** Characters of any string in the document (resource URIs are at most 512 in requests). */
  maxStringLength: 512,
  /** Characters of a rule id. */
  maxRuleIdLength: 128,
  /** Condition nodes plus list elements in the whole document. */
  maxTotalNodes: 200_000,
  /** Unknown members reported per object before the rest are summarised. */
  maxUnknownFieldsPerObject: 10,
  /** Errors returned at once; past this one `too_many_errors` closes the list. */
  maxErrors: 100,
  /** Bytes of a serialized document; for the HTTP layer's body limit (validation sees parsed JSON). */
  maxDocumentBytes: 8 * 1024 * 1024,
} as const;
