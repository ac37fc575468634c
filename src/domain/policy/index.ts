// Gavel's policy engine: validate a document, compile it once, evaluate requests.
export type {
  Effect, InputName, Scalar, Condition, LeafCondition, CompareCondition, BetweenCondition, MembershipCondition,
  MatchesResourceCondition, TimeWindowCondition, AllAnyCondition, NotCondition, Operator, Rule, PolicyDocument,
  PolicyError, PolicyValidation,
} from './types.ts';
export { validatePolicy, SUPPORTED_SPEC_VERSIONS } from './validate.ts';
export { compilePolicy, type CompiledPolicy } from './compile.ts';
export { evaluate, type PolicyInput, type PolicyResult } from './evaluate.ts';
export { meet, meetAll } from './meet.ts';
export { policyHash } from './hash.ts';
export { POLICY_REASONS, indeterminateDetail, type PolicyReasonCode } from './reasons.ts';
export { POLICY_LIMITS } from './limits.ts';
export { INPUT_TYPES, UNAVAILABLE_INPUTS, OPERATORS_BY_TYPE, type InputType } from './inputs.ts';
export { parseTimestamp, isResourceUri, parseResourcePattern, isDid } from './formats.ts';
