// Compiles a validated document once into closures plus an index, so evaluation touches
// only the rules that can match. Conditions evaluate in Kleene three-valued logic: a leaf
// whose input is absent, malformed or in another currency is UNKNOWN, not false.
import { parseResourcePattern, parseTimestamp } from './formats.ts';
import { EFFECT_RANK } from './meet.ts';
import { addPrefix, emptyPrefixTree, type PrefixNode } from './prefix-tree.ts';
import type { Condition, InputName, LeafCondition, PolicyDocument, Scalar } from './types.ts';

// Truth values. Unknowns are ordered by how they are reported when several combine.
export const F = 0;
export const T = 1;
export const U_MISSING = 2;
export const U_INVALID = 3;
export const U_CURRENCY = 4;
export type Truth = 0 | 1 | 2 | 3 | 4;

/** Input slots of the evaluation environment. */
export const SLOT: Readonly<Record<InputName, number>> = {
  action: 0,
  resource: 1,
  agent: 2,
  'amount.minor': 3,
  'amount.currency': 4,
  request_time: 5,
  delegation_depth: 6,
  permit_commitment: 7,
  backend_finality: 8,
  root_permit_commitment: 9,
};
export const SLOT_COUNT = 10;

/** Per-evaluation state: normalized inputs and the step counter. */
export interface Env {
  readonly v: (string | number | undefined)[];
  /** Bit (1 << slot) set when that input was present but malformed. */
  invalid: number;
  steps: number;
}

export type Check = (env: Env) => Truth;

export interface CompiledRule {
  readonly id: string;
  readonly rank: number;
  /** null: no condition, the rule always matches. */
  readonly check: Check | null;
}

interface Dimension {
  readonly byKey: Map<Scalar, number[]>;
  /** Every rule indexed on this input (for resource: exact and prefix), used when the request lacks it. */
  readonly all: number[];
}

export interface RuleIndex {
  readonly action: Dimension;
  readonly agent: Dimension;
  readonly resource: Dimension;
  /** Rules indexed by a literal resource prefix (matches_resource with a trailing *). */
  readonly prefixes: PrefixNode;
  /** Rules with no usable necessary condition: always candidates. */
  readonly always: number[];
}

/** A policy ready for evaluate(). Treat as opaque; fields are for the evaluator. */
export interface CompiledPolicy {
  readonly specVersion: string;
  readonly rules: readonly CompiledRule[];
  readonly index: RuleIndex;
  /** Bitmask of input slots some rule reads; evaluate() checks only these. */
  readonly reads: number;
}

function unknown(env: Env, slot: number): Truth {
  return (env.invalid & (1 << slot)) !== 0 ? U_INVALID : U_MISSING;
}

function literal(input: InputName, value: Scalar): Scalar {
  return input === 'request_time' ? (parseTimestamp(value) as number) : value;
}

function predicate(leaf: LeafCondition): (v: Scalar) => boolean {
  switch (leaf.op) {
    case 'eq': { const x = literal(leaf.input, leaf.value); return (v) => v === x; }
    case 'neq': { const x = literal(leaf.input, leaf.value); return (v) => v !== x; }
    case 'lt': { const x = literal(leaf.input, leaf.value); return (v) => v < x; }
    case 'lte': { const x = literal(leaf.input, leaf.value); return (v) => v <= x; }
    case 'gt': { const x = literal(leaf.input, leaf.value); return (v) => v > x; }
    case 'gte': { const x = literal(leaf.input, leaf.value); return (v) => v >= x; }
    case 'between': {
      const lo = literal(leaf.input, leaf.min), hi = literal(leaf.input, leaf.max);
      return (v) => v >= lo && v <= hi;
    }
    case 'in': { const set = new Set(leaf.values.map((x) => literal(leaf.input, x))); return (v) => set.has(v); }
    case 'not_in': { const set = new Set(leaf.values.map((x) => literal(leaf.input, x))); return (v) => !set.has(v); }
    case 'matches_resource': {
      const pattern = parseResourcePattern(leaf.value);
      if (pattern === null) throw new TypeError(`compilePolicy: unvalidated resource pattern ${leaf.value}`);
      if (pattern.kind === 'exact') { const uri = pattern.uri; return (v) => v === uri; }
      const prefix = pattern.prefix;
      return (v) => (v as string).startsWith(prefix);
    }
    case 'within_time_window': {
      const from = parseTimestamp(leaf.from) as number, until = parseTimestamp(leaf.until) as number;
      return (v) => (v as number) >= from && (v as number) < until;
    }
  }
}

function compileLeaf(leaf: LeafCondition): Check {
  const test = predicate(leaf);
  const slot = SLOT[leaf.input];
  if (leaf.input === 'amount.minor') {
    // Money compares only within its currency; another currency is UNKNOWN, never false.
    const currency = (leaf as { currency?: string }).currency;
    const currencySlot = SLOT['amount.currency'];
    return (env) => {
      env.steps++;
      const v = env.v[slot];
      if (v === undefined) return unknown(env, slot);
      if (env.v[currencySlot] !== currency) return U_CURRENCY;
      return test(v) ? T : F;
    };
  }
  return (env) => {
    env.steps++;
    const v = env.v[slot];
    if (v === undefined) return unknown(env, slot);
    return test(v) ? T : F;
  };
}

/** Compiles one validated condition. Recursion depth is bounded by POLICY_LIMITS.maxDepth. */
export function compileCondition(condition: Condition): Check {
  switch (condition.op) {
    case 'and': {
      const args = condition.args.map(compileCondition);
      return (env) => {
        env.steps++;
        let u = 0;
        for (let i = 0; i < args.length; i++) {
          const r = (args[i] as Check)(env);
          if (r === F) return F;
          if (r > u) u = r;
        }
        return (u === 0 ? T : u) as Truth;
      };
    }
    case 'or': {
      const args = condition.args.map(compileCondition);
      return (env) => {
        env.steps++;
        let u = 0;
        for (let i = 0; i < args.length; i++) {
          const r = (args[i] as Check)(env);
          if (r === T) return T;
          if (r > u) u = r;
        }
        return u as Truth;
      };
    }
    case 'not': {
      const arg = compileCondition(condition.args[0]);
      return (env) => {
        env.steps++;
        const r = arg(env);
        return r === T ? F : r === F ? T : r;
      };
    }
    default:
      return compileLeaf(condition);
  }
}

/** Adds the slots a condition reads to `mask`. */
function readsOf(condition: Condition): number {
  switch (condition.op) {
    case 'and':
    case 'or':
    case 'not':
      return condition.args.reduce((mask, arg) => mask | readsOf(arg), 0);
    case 'eq': case 'neq': case 'lt': case 'lte': case 'gt': case 'gte': case 'between': case 'in': case 'not_in':
      // Money reads the currency too.
      return condition.input === 'amount.minor' ? 0b11000 : 1 << SLOT[condition.input];
    default:
      return 1 << SLOT[condition.input];
  }
}

/** Top-level conjuncts: a condition is false whenever one of them is false. */
function conjuncts(condition: Condition, out: LeafCondition[]): void {
  switch (condition.op) {
    case 'and':
      for (const arg of condition.args) conjuncts(arg, out);
      return;
    case 'or':
    case 'not':
      return;
    default:
      out.push(condition);
  }
}

type IndexKey =
  | { dim: 'action' | 'agent' | 'resource'; keys: readonly Scalar[] }
  | { dim: 'prefix'; prefix: string }
  | null;

/**
 * Picks one necessary condition to bucket the rule by: an equality or membership on action
 * (preferred), agent or resource, else a literal resource prefix. If the rule's condition
 * is TRUE or UNKNOWN, this conjunct is TRUE or UNKNOWN, so a rule outside every probed
 * bucket is certainly FALSE and skipping it changes neither the decision nor any report.
 */
function indexKey(condition: Condition | undefined): IndexKey {
  if (condition === undefined) return null;
  const leaves: LeafCondition[] = [];
  conjuncts(condition, leaves);
  for (const dim of ['action', 'agent', 'resource'] as const) {
    for (const leaf of leaves) {
      if (leaf.input !== dim) continue;
      if (leaf.op === 'eq') return { dim, keys: [leaf.value] };
      if (leaf.op === 'in') return { dim, keys: leaf.values };
      if (leaf.op === 'matches_resource') {
        const pattern = parseResourcePattern(leaf.value);
        if (pattern?.kind === 'exact') return { dim: 'resource', keys: [pattern.uri] };
        if (pattern?.kind === 'prefix') return { dim: 'prefix', prefix: pattern.prefix };
      }
    }
  }
  return null;
}

function push<K>(map: Map<K, number[]>, key: K, rule: number): void {
  const bucket = map.get(key);
  if (bucket === undefined) map.set(key, [rule]);
  else if (bucket[bucket.length - 1] !== rule) bucket.push(rule); // `in` may list a key twice
}

/** Compiles a document returned by validatePolicy. Do not pass unvalidated data. */
export function compilePolicy(policy: PolicyDocument): CompiledPolicy {
  const dimension = (): Dimension => ({ byKey: new Map(), all: [] });
  const index = { action: dimension(), agent: dimension(), resource: dimension(), prefixes: emptyPrefixTree(), always: [] as number[] };
  const resourceRules: number[] = [];
  let reads = 0;
  const rules = policy.rules.map((rule, i): CompiledRule => {
    const key = indexKey(rule.when);
    if (rule.when !== undefined) reads |= readsOf(rule.when);
    if (key === null) index.always.push(i);
    else if (key.dim === 'prefix') {
      addPrefix(index.prefixes, key.prefix, i);
      resourceRules.push(i);
    } else {
      const dim = index[key.dim];
      for (const k of key.keys) push(dim.byKey, k, i);
      if (key.dim === 'resource') resourceRules.push(i);
      else dim.all.push(i);
    }
    return { id: rule.id, rank: EFFECT_RANK[rule.effect], check: rule.when === undefined ? null : compileCondition(rule.when) };
  });
  index.resource.all.push(...resourceRules);
  // The index probes action, agent and resource whenever a dimension holds rules.
  if (index.action.all.length > 0) reads |= 1 << SLOT.action;
  if (index.agent.all.length > 0) reads |= 1 << SLOT.agent;
  if (index.resource.all.length > 0) reads |= 1 << SLOT.resource;
  return { specVersion: policy.spec_version, rules, index, reads };
}
