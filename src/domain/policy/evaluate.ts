// Evaluates a compiled policy against one request. Pure: no clock (request_time is an
// input), no randomness, no I/O; the same input and document give the same result and
// the same step count.
import { checkMinor, isCurrencyCode } from '../money/money.ts';
import { F, SLOT_COUNT, T, U_CURRENCY, U_INVALID, type CompiledPolicy, type Env } from './compile.ts';
import { isAction, isDid, isResourceUri, isSha256Hex, isToken } from './formats.ts';
import { EFFECT_BY_RANK } from './meet.ts';
import { walkPrefixes } from './prefix-tree.ts';
import { POLICY_REASONS, type PolicyReasonCode } from './reasons.ts';
import type { Effect } from './types.ts';
import type { Money } from '../money/money.ts';

/** What a rule may read. Absent members are absent inputs. */
export interface PolicyInput {
  readonly action?: string;
  /** resource://<path> */
  readonly resource?: string;
  /** Agent DID. */
  readonly agent?: string;
  /** Supplies amount.minor and amount.currency. */
  readonly amount?: Money;
  /** Epoch milliseconds (an integer); the server's clock, set by the caller of evaluate. */
  readonly request_time?: number;
  readonly delegation_depth?: number;
  readonly permit_commitment?: string;
  /** The chain's root: the permit the project issued, which every link below it was delegated from. */
  readonly root_permit_commitment?: string;
  readonly backend_finality?: string;
}

export interface PolicyResult {
  readonly decision: Effect;
  readonly reason_code: PolicyReasonCode;
  /** Ids of the rules whose condition held, in document order. */
  readonly matched_rules: string[];
  /** Ids of the rules whose condition was indeterminate, in document order. */
  readonly indeterminate_rules: string[];
  /**
   * On a DENY the policy failed closed on: the indeterminate rules that could have changed the
   * decision, each with its cause, in document order (absent otherwise). An undecidable rule that
   * could not (an ALLOW beside a matched REQUIRE_APPROVAL) is in `indeterminate_rules` only.
   */
  readonly failed_closed_on?: readonly IndeterminateRule[];
  /** Index probes + rules considered + condition nodes evaluated. */
  readonly steps: number;
}

/** A rule the policy could not evaluate, and why (one of the three `indeterminate_*` reasons). */
export interface IndeterminateRule { readonly id: string; readonly cause: PolicyReasonCode }

const ALL_INVALID = (1 << SLOT_COUNT) - 1;

const SLOT_CHECKS: readonly ((x: unknown) => boolean)[] = [isAction, isResourceUri, isDid];

// Normalizes only the inputs some rule reads (`reads`, a slot bitmask), so a policy that never
// looks at, say, permit_commitment never pays to check it.
function fill(env: Env, input: unknown, reads: number): void {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    env.invalid = ALL_INVALID;
    return;
  }
  const r = input as Record<string, unknown>;
  const v = env.v;
  for (let slot = 0; slot < 3; slot++) {
    if ((reads & (1 << slot)) === 0) continue;
    const value = slot === 0 ? r.action : slot === 1 ? r.resource : r.agent;
    if (value === undefined) continue;
    if ((SLOT_CHECKS[slot] as (x: unknown) => boolean)(value)) v[slot] = value as string;
    else env.invalid |= 1 << slot;
  }
  if ((reads & 0b11000) !== 0 && r.amount !== undefined) {
    const a = r.amount as Record<string, unknown> | null;
    if (typeof a === 'object' && a !== null && checkMinor(a.minor) === null && isCurrencyCode(a.currency)) {
      v[3] = (a.minor as number) + 0;
      v[4] = a.currency;
    } else env.invalid |= 0b11000;
  }
  if ((reads & (1 << 5)) !== 0 && r.request_time !== undefined) {
    if (Number.isSafeInteger(r.request_time)) v[5] = (r.request_time as number) + 0;
    else env.invalid |= 1 << 5;
  }
  if ((reads & (1 << 6)) !== 0 && r.delegation_depth !== undefined) {
    const depth = r.delegation_depth;
    if (Number.isSafeInteger(depth) && (depth as number) >= 0) v[6] = (depth as number) + 0;
    else env.invalid |= 1 << 6;
  }
  if ((reads & (1 << 7)) !== 0 && r.permit_commitment !== undefined) {
    if (isSha256Hex(r.permit_commitment)) v[7] = r.permit_commitment;
    else env.invalid |= 1 << 7;
  }
  if ((reads & (1 << 8)) !== 0 && r.backend_finality !== undefined) {
    if (isToken(r.backend_finality)) v[8] = r.backend_finality;
    else env.invalid |= 1 << 8;
  }
  if ((reads & (1 << 9)) !== 0 && r.root_permit_commitment !== undefined) {
    if (isSha256Hex(r.root_permit_commitment)) v[9] = r.root_permit_commitment;
    else env.invalid |= 1 << 9;
  }
}

const EMPTY: readonly number[] = [];

function byNumber(a: number, b: number): number {
  return a - b;
}

/** Rule ids in document order (buckets are visited bucket by bucket). */
function ids(rules: CompiledPolicy['rules'], list: number[] | undefined): string[] {
  if (list === undefined) return [];
  if (list.length > 1) list.sort(byNumber);
  const out = new Array<string>(list.length);
  for (let i = 0; i < list.length; i++) out[i] = rules[list[i] as number]!.id;
  return out;
}

function causeReason(cause: number): PolicyReasonCode {
  return cause === U_CURRENCY ? POLICY_REASONS.currencyMismatch : cause === U_INVALID ? POLICY_REASONS.invalidInput : POLICY_REASONS.missingInput;
}

/** Evaluates `input` against `compiled`. Never throws; malformed input members count as indeterminate. */
export function evaluate(compiled: CompiledPolicy, input: PolicyInput): PolicyResult {
  const env: Env = { v: [undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined], invalid: 0, steps: 0 };
  try {
    fill(env, input, compiled.reads);
  } catch {
    env.v.fill(undefined);
    env.invalid = ALL_INVALID; // a throwing getter: nothing in it is trusted
  }
  const { index, rules } = compiled;
  const v = env.v;

  // Candidate buckets. Each rule sits in exactly one dimension, and one request key hits
  // at most one bucket per dimension, so no rule is visited twice.
  const buckets: (readonly number[])[] = [index.always];
  // A dimension holding no rules is not probed (and costs no step). A missing or malformed
  // indexed input makes every rule of its dimension a candidate: they evaluate UNKNOWN or FALSE.
  if (index.action.all.length > 0) {
    const action = v[0];
    if (action === undefined) buckets.push(index.action.all);
    else { env.steps++; buckets.push(index.action.byKey.get(action) ?? EMPTY); }
  }
  if (index.agent.all.length > 0) {
    const agent = v[2];
    if (agent === undefined) buckets.push(index.agent.all);
    else { env.steps++; buckets.push(index.agent.byKey.get(agent) ?? EMPTY); }
  }
  if (index.resource.all.length > 0) {
    const resource = v[1] as string | undefined;
    if (resource === undefined) buckets.push(index.resource.all);
    else {
      if (index.resource.byKey.size > 0) { env.steps++; buckets.push(index.resource.byKey.get(resource) ?? EMPTY); }
      if (index.prefixes.children !== undefined) env.steps += walkPrefixes(index.prefixes, resource, buckets);
    }
  }

  let matchedRank = 3; // above ALLOW: nothing matched yet
  let unknownRankMin = 3; // meet of indeterminate rules' effects
  let matched: number[] | undefined;
  let unknowns: number[] | undefined;
  let unknownCauses: number[] | undefined; // beside unknowns: each indeterminate rule's cause
  for (let b = 0; b < buckets.length; b++) {
    const bucket = buckets[b] as readonly number[];
    for (let i = 0; i < bucket.length; i++) {
      const ruleIndex = bucket[i] as number;
      const rule = rules[ruleIndex]!;
      env.steps++;
      const r = rule.check === null ? T : rule.check(env);
      if (r === F) continue;
      if (r === T) {
        (matched ??= []).push(ruleIndex);
        if (rule.rank < matchedRank) matchedRank = rule.rank;
      } else {
        (unknowns ??= []).push(ruleIndex);
        (unknownCauses ??= []).push(r);
        if (rule.rank < unknownRankMin) unknownRankMin = rule.rank;
      }
    }
  }

  const result = (decision: Effect, reason_code: PolicyReasonCode): PolicyResult => ({
    decision,
    reason_code,
    matched_rules: ids(rules, matched),
    indeterminate_rules: ids(rules, unknowns),
    steps: env.steps,
  });

  if (matchedRank === 0) return result('DENY', POLICY_REASONS.deny);
  if (unknowns !== undefined) {
    // An indeterminate rule matters only if its matching could change the decision:
    // with matches, when it is more restrictive than their meet; without matches, always
    // (its match would replace the default deny, or make the reason a policy deny).
    // When it matters, fail closed.
    const matters = matchedRank <= 2 ? unknownRankMin < matchedRank : true;
    if (matters) {
      // The reason names a cause that mattered ("... and it mattered", docs/policy-language.md):
      // only the indeterminate rules that could change the decision count, not, say, an
      // undecidable ALLOW beside a matched REQUIRE_APPROVAL.
      let unknownWorst = 0;
      const mattered: [number, number][] = [];
      for (let i = 0; i < unknowns.length; i++) {
        const cause = unknownCauses![i] as number;
        const ruleIndex = unknowns[i] as number;
        if (matchedRank <= 2 && rules[ruleIndex]!.rank >= matchedRank) continue;
        mattered.push([ruleIndex, cause]);
        if (cause > unknownWorst) unknownWorst = cause;
      }
      mattered.sort((a, b) => a[0] - b[0]);
      const reason = causeReason(unknownWorst);
      return { ...result('DENY', reason), failed_closed_on: mattered.map(([i, cause]) => ({ id: rules[i]!.id, cause: causeReason(cause) })) };
    }
  }
  if (matchedRank > 2) return result('DENY', POLICY_REASONS.noMatchingRule);
  const decision = EFFECT_BY_RANK[matchedRank] as Effect;
  return result(decision, decision === 'ALLOW' ? POLICY_REASONS.allow : POLICY_REASONS.requireApproval);
}
