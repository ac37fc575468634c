// The policy document (spec 2.7) as it looks after validation. Field names of between
// (min, max), in/not_in (values) and within_time_window (from, until) are Gavel's choice,
// see docs/policy-language.md and docs/decisions/0100-policy-language.md.

export type Effect = 'ALLOW' | 'DENY' | 'REQUIRE_APPROVAL';

export type InputName =
  | 'action'
  | 'resource'
  | 'agent'
  | 'amount.minor'
  | 'amount.currency'
  | 'request_time'
  | 'delegation_depth'
  | 'permit_commitment'
  | 'root_permit_commitment'
  | 'backend_finality';

/** A literal in a document: strings for text, DIDs, URIs and ISO timestamps; integers for money and depth. */
export type Scalar = string | number;

export type ComparisonOperator = 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte';

export interface CompareCondition {
  readonly op: ComparisonOperator;
  readonly input: InputName;
  readonly value: Scalar;
  /** Required exactly when input is amount.minor. */
  readonly currency?: string;
}

/** Closed range: min <= input <= max. */
export interface BetweenCondition {
  readonly op: 'between';
  readonly input: InputName;
  readonly min: Scalar;
  readonly max: Scalar;
  readonly currency?: string;
}

export interface MembershipCondition {
  readonly op: 'in' | 'not_in';
  readonly input: InputName;
  readonly values: readonly Scalar[];
  readonly currency?: string;
}

/** `resource://a/b` matches exactly; `resource://a/*` matches every resource starting with `resource://a/`. */
export interface MatchesResourceCondition {
  readonly op: 'matches_resource';
  readonly input: 'resource';
  readonly value: string;
}

/** Half-open window: from <= request_time < until (ISO-8601 in the document). */
export interface TimeWindowCondition {
  readonly op: 'within_time_window';
  readonly input: 'request_time';
  readonly from: string;
  readonly until: string;
}

export interface AllAnyCondition {
  readonly op: 'and' | 'or';
  readonly args: readonly Condition[];
}

export interface NotCondition {
  readonly op: 'not';
  readonly args: readonly [Condition];
}

export type LeafCondition = CompareCondition | BetweenCondition | MembershipCondition | MatchesResourceCondition | TimeWindowCondition;
export type Condition = LeafCondition | AllAnyCondition | NotCondition;
export type Operator = Condition['op'];

export interface Rule {
  readonly id: string;
  readonly effect: Effect;
  /** Absent: the rule always matches. */
  readonly when?: Condition;
}

export interface PolicyDocument {
  readonly spec_version: string;
  readonly rules: readonly Rule[];
}

/** One validation error; pointer is an RFC 6901 JSON Pointer into the submitted document. */
export interface PolicyError {
  readonly pointer: string;
  readonly code: string;
  readonly message: string;
}

export type PolicyValidation = { ok: true; policy: PolicyDocument } | { ok: false; errors: PolicyError[] };
