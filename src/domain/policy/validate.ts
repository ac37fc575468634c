// Validates an untrusted JSON value as a policy document. Returns every error at once,
// each located by an RFC 6901 pointer; never throws. Work is bounded by POLICY_LIMITS:
// recursion stops at maxDepth, lists and argument arrays are checked for length before
// they are walked, and the whole walk stops once condition nodes plus list values pass maxTotalNodes.
import { checkMinor, isCurrencyCode, minorMessage } from '../money/money.ts';
import { isAction, isDid, isRequestPattern, isRequestResource, isResourceUri, isSha256Hex, isToken, parseResourcePattern, parseTimestamp } from './formats.ts';
import { INPUT_TYPES, OPERATORS_BY_TYPE, TYPE_DESCRIPTIONS, NOT_YET_SUPPLIED, UNAVAILABLE_INPUTS, isInputName, type InputType } from './inputs.ts';
import { POLICY_LIMITS } from './limits.ts';
import { pointerAppend } from './pointer.ts';
import type { Condition, Effect, InputName, LeafCondition, Operator, PolicyError, PolicyValidation, Rule, Scalar } from './types.ts';

/** spec_version values this engine understands. */
export const SUPPORTED_SPEC_VERSIONS: readonly string[] = ['1'];

const EFFECTS: ReadonlySet<string> = new Set<Effect>(['ALLOW', 'DENY', 'REQUIRE_APPROVAL']);
const RULE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;

// Members each operator takes besides op (and currency, checked separately for every leaf).
const LEAF_FIELDS: Readonly<Record<string, readonly string[]>> = {
  eq: ['input', 'value'],
  neq: ['input', 'value'],
  lt: ['input', 'value'],
  lte: ['input', 'value'],
  gt: ['input', 'value'],
  gte: ['input', 'value'],
  between: ['input', 'min', 'max'],
  in: ['input', 'values'],
  not_in: ['input', 'values'],
  matches_resource: ['input', 'value'],
  within_time_window: ['input', 'from', 'until'],
};
const COMPOSITES: ReadonlySet<string> = new Set(['and', 'or', 'not']);

interface Walk {
  readonly errors: PolicyError[];
  /**
   * A document submitted now (save, simulation), not one stored before: its resource literals must
   * be in the one spelling a request may use, or a DENY on them would match nothing (formats.ts).
   */
  readonly submitted: boolean;
  nodes: number;
  full: boolean;
  sizeReported: boolean;
}

function report(walk: Walk, pointer: string, code: string, message: string): void {
  if (walk.full) return;
  if (walk.errors.length >= POLICY_LIMITS.maxErrors) {
    walk.full = true;
    walk.errors.push({ pointer: '', code: 'too_many_errors', message: `more than ${POLICY_LIMITS.maxErrors} errors; the rest are not listed` });
    return;
  }
  walk.errors.push({ pointer, code, message });
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function own(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function quote(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}...` : text);
}

function checkFields(walk: Walk, record: Record<string, unknown>, pointer: string, allowed: readonly string[]): void {
  let unknown = 0;
  for (const key of Object.keys(record)) {
    if (allowed.includes(key)) continue;
    unknown++;
    if (unknown <= POLICY_LIMITS.maxUnknownFieldsPerObject) {
      report(walk, pointerAppend(pointer, key), 'unknown_field', `unknown field ${quote(key)}; allowed: ${allowed.join(', ')}`);
    }
  }
  if (unknown > POLICY_LIMITS.maxUnknownFieldsPerObject) {
    report(walk, pointer, 'unknown_field', `${unknown - POLICY_LIMITS.maxUnknownFieldsPerObject} more unknown fields`);
  }
}

function required(walk: Walk, record: Record<string, unknown>, pointer: string, key: string): unknown {
  const value = own(record, key);
  if (value === undefined) report(walk, pointerAppend(pointer, key), 'missing_field', `${key} is required`);
  return value;
}

/** Checks one literal against the input's type; returns it when valid. */
function checkScalar(walk: Walk, type: InputType, value: unknown, pointer: string): Scalar | undefined {
  const numeric = type === 'money' || type === 'integer';
  if (numeric ? typeof value !== 'number' : typeof value !== 'string') {
    if (type === 'money' && typeof value === 'string') {
      report(walk, pointer, 'money_minor_not_number', `${minorMessage('money_minor_not_number')}; got a string`);
    } else {
      report(walk, pointer, 'invalid_type', `expected ${TYPE_DESCRIPTIONS[type]}, got ${kind(value)}`);
    }
    return undefined;
  }
  if (typeof value === 'string' && value.length > POLICY_LIMITS.maxStringLength) {
    report(walk, pointer, 'string_too_long', `strings are at most ${POLICY_LIMITS.maxStringLength} characters`);
    return undefined;
  }
  let ok: boolean;
  let code = 'invalid_value';
  let expected = TYPE_DESCRIPTIONS[type];
  switch (type) {
    case 'money': {
      const problem = checkMinor(value);
      if (problem !== null) {
        report(walk, pointer, problem, minorMessage(problem));
        return undefined;
      }
      return (value as number) + 0;
    }
    case 'integer':
      ok = Number.isSafeInteger(value) && (value as number) >= 0;
      if (ok) return (value as number) + 0;
      break;
    case 'action': ok = isAction(value); break;
    case 'resource':
      ok = isResourceUri(value);
      code = 'invalid_resource';
      expected = `${expected} of RFC 3986 path characters (${PERCENT_ENCODE})`;
      if (ok && walk.submitted && !isRequestResource(value)) {
        report(walk, pointer, 'resource_not_normal', NOT_NORMAL);
        return undefined;
      }
      break;
    case 'did': ok = isDid(value); break;
    case 'currency': ok = isCurrencyCode(value); code = 'invalid_currency'; break;
    case 'timestamp': ok = parseTimestamp(value) !== null; code = 'invalid_timestamp'; break;
    case 'sha256': ok = isSha256Hex(value); break;
    case 'token': ok = isToken(value); break;
  }
  if (ok) return value as string;
  report(walk, pointer, code, `expected ${expected}`);
  return undefined;
}

function order(type: InputType, value: Scalar): number {
  return type === 'timestamp' ? (parseTimestamp(value) as number) : (value as number);
}

function checkLeaf(walk: Walk, node: Record<string, unknown>, op: string, pointer: string): LeafCondition | undefined {
  const before = walk.errors.length;
  const fields = LEAF_FIELDS[op] as readonly string[];
  checkFields(walk, node, pointer, ['op', 'currency', ...fields]);

  const input = required(walk, node, pointer, 'input');
  let type: InputType | undefined;
  if (typeof input === 'string') {
    const milestone = Object.hasOwn(UNAVAILABLE_INPUTS, input) ? UNAVAILABLE_INPUTS[input]
      : walk.submitted && Object.hasOwn(NOT_YET_SUPPLIED, input) ? NOT_YET_SUPPLIED[input] : undefined;
    if (milestone !== undefined) {
      report(walk, pointerAppend(pointer, 'input'), 'input_not_available', `${input} is produced by the ${milestone} milestone, not yet available`);
    } else if (!isInputName(input)) {
      report(walk, pointerAppend(pointer, 'input'), 'unknown_input', `unknown input ${quote(input)}; known: ${Object.keys(INPUT_TYPES).join(', ')}`);
    } else {
      type = INPUT_TYPES[input];
    }
  } else if (input !== undefined) {
    report(walk, pointerAppend(pointer, 'input'), 'invalid_type', `input must be a string, got ${kind(input)}`);
  }

  const currency = own(node, 'currency');
  if (type !== undefined) {
    if (!OPERATORS_BY_TYPE[type].has(op as Operator)) {
      const allowed = [...OPERATORS_BY_TYPE[type]].join(', ');
      report(walk, pointerAppend(pointer, 'op'), 'operator_not_applicable', `${op} does not apply to ${input as string} (${TYPE_DESCRIPTIONS[type]}); allowed: ${allowed}`);
      type = undefined; // argument types are unknowable; do not report them twice
    } else if (type === 'money') {
      if (currency === undefined) {
        report(walk, pointerAppend(pointer, 'currency'), 'currency_required', 'a comparison of amount.minor needs a currency (three uppercase letters)');
      } else if (!isCurrencyCode(currency)) {
        report(walk, pointerAppend(pointer, 'currency'), 'invalid_currency', 'currency must be three uppercase letters (ISO 4217)');
      }
    } else if (currency !== undefined) {
      report(walk, pointerAppend(pointer, 'currency'), 'currency_not_applicable', `currency applies only to amount.minor, not ${input as string}`);
    }
  }

  const at = (key: string) => pointerAppend(pointer, key);
  let built: LeafCondition | undefined;
  const name = input as InputName;
  const money = type === 'money' ? { currency: currency as string } : {};
  switch (op) {
    case 'between': {
      const min = required(walk, node, pointer, 'min');
      const max = required(walk, node, pointer, 'max');
      if (type === undefined || min === undefined || max === undefined) break;
      const lo = checkScalar(walk, type, min, at('min'));
      const hi = checkScalar(walk, type, max, at('max'));
      if (lo === undefined || hi === undefined) break;
      if (order(type, lo) > order(type, hi)) {
        report(walk, at('max'), 'invalid_range', 'between needs min <= max (the range is closed: both ends match)');
        break;
      }
      built = { op, input: name, min: lo, max: hi, ...money };
      break;
    }
    case 'in':
    case 'not_in': {
      const values = required(walk, node, pointer, 'values');
      if (values === undefined) break;
      if (!Array.isArray(values)) {
        report(walk, at('values'), 'invalid_type', `values must be an array, got ${kind(values)}`);
        break;
      }
      if (values.length === 0) {
        report(walk, at('values'), 'empty_list', `${op} needs at least one value`);
        break;
      }
      if (values.length > POLICY_LIMITS.maxListSize) {
        report(walk, at('values'), 'list_too_long', `lists hold at most ${POLICY_LIMITS.maxListSize} values`);
        break;
      }
      if (overBudget(walk, values.length, at('values'))) break;
      if (type === undefined) break;
      const out: Scalar[] = [];
      for (let i = 0; i < values.length; i++) {
        const v = checkScalar(walk, type, values[i], pointerAppend(at('values'), i));
        if (v !== undefined) out.push(v);
      }
      if (out.length === values.length) built = { op, input: name, values: out, ...money };
      break;
    }
    case 'matches_resource': {
      const value = required(walk, node, pointer, 'value');
      if (value === undefined) break;
      if (typeof value !== 'string') {
        report(walk, at('value'), 'invalid_type', `a resource pattern must be a string, got ${kind(value)}`);
      } else if (value.length > POLICY_LIMITS.maxStringLength) {
        report(walk, at('value'), 'string_too_long', `strings are at most ${POLICY_LIMITS.maxStringLength} characters`);
      } else if (parseResourcePattern(value) === null) {
        report(walk, at('value'), 'invalid_resource_pattern', `expected resource://<path> of RFC 3986 path characters (${PERCENT_ENCODE}) with at most one "*", only at the end; no empty or dot segments`);
      } else if (walk.submitted && !isRequestPattern(value)) {
        report(walk, at('value'), 'resource_not_normal', NOT_NORMAL);
      } else if (type !== undefined) {
        built = { op, input: 'resource', value };
      }
      break;
    }
    case 'within_time_window': {
      const from = required(walk, node, pointer, 'from');
      const until = required(walk, node, pointer, 'until');
      const start = from === undefined ? null : parseTimestamp(from);
      const end = until === undefined ? null : parseTimestamp(until);
      if (from !== undefined && start === null) report(walk, at('from'), 'invalid_timestamp', `from must be ${TYPE_DESCRIPTIONS.timestamp}`);
      if (until !== undefined && end === null) report(walk, at('until'), 'invalid_timestamp', `until must be ${TYPE_DESCRIPTIONS.timestamp}`);
      if (start === null || end === null) break;
      if (start >= end) {
        report(walk, at('until'), 'invalid_time_window', 'until must be later than from (the window is from <= t < until)');
        break;
      }
      if (type !== undefined) built = { op, input: 'request_time', from: from as string, until: until as string };
      break;
    }
    default: {
      const value = required(walk, node, pointer, 'value');
      if (type === undefined || value === undefined) break;
      const v = checkScalar(walk, type, value, at('value'));
      if (v !== undefined) built = { op: op as LeafCondition['op'] & ('eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte'), input: name, value: v, ...money };
    }
  }
  return walk.errors.length === before ? built : undefined;
}

/**
 * Counts `nodes` (a condition, or a list's values) against maxTotalNodes before they are walked;
 * past it, reports document_too_large once and answers true.
 */
function overBudget(walk: Walk, nodes: number, pointer: string): boolean {
  walk.nodes += nodes;
  if (walk.nodes <= POLICY_LIMITS.maxTotalNodes) return false;
  if (!walk.sizeReported) {
    walk.sizeReported = true;
    report(walk, pointer, 'document_too_large', `a document holds at most ${POLICY_LIMITS.maxTotalNodes} conditions and list values; validation stopped here`);
  }
  return true;
}

function checkCondition(walk: Walk, node: unknown, pointer: string, depth: number): Condition | undefined {
  if (walk.full) return undefined;
  if (depth > POLICY_LIMITS.maxDepth) {
    report(walk, pointer, 'too_deep', `conditions nest at most ${POLICY_LIMITS.maxDepth} levels`);
    return undefined;
  }
  if (overBudget(walk, 1, pointer)) return undefined;
  if (!isObject(node)) {
    report(walk, pointer, 'invalid_type', `a condition must be an object with op, got ${kind(node)}`);
    return undefined;
  }
  const op = required(walk, node, pointer, 'op');
  if (op === undefined) return undefined;
  if (typeof op !== 'string') {
    report(walk, pointerAppend(pointer, 'op'), 'invalid_type', `op must be a string, got ${kind(op)}`);
    return undefined;
  }
  if (Object.hasOwn(LEAF_FIELDS, op)) return checkLeaf(walk, node, op, pointer);
  if (!COMPOSITES.has(op)) {
    report(walk, pointerAppend(pointer, 'op'), 'unknown_operator', `unknown operator ${quote(op)}; known: ${[...Object.keys(LEAF_FIELDS), ...COMPOSITES].join(', ')}`);
    return undefined;
  }

  const before = walk.errors.length;
  checkFields(walk, node, pointer, ['op', 'args']);
  const args = required(walk, node, pointer, 'args');
  if (args === undefined) return undefined;
  const at = pointerAppend(pointer, 'args');
  if (!Array.isArray(args)) {
    report(walk, at, 'invalid_type', `args must be an array of conditions, got ${kind(args)}`);
    return undefined;
  }
  if (args.length === 0) {
    report(walk, at, 'empty_composite', `${op} needs at least one condition in args`);
    return undefined;
  }
  if (op === 'not' && args.length !== 1) {
    report(walk, at, 'invalid_arity', 'not takes exactly one condition in args');
    return undefined;
  }
  if (args.length > POLICY_LIMITS.maxArgs) {
    report(walk, at, 'too_many_args', `${op} takes at most ${POLICY_LIMITS.maxArgs} conditions`);
    return undefined;
  }
  const out: Condition[] = [];
  for (let i = 0; i < args.length; i++) {
    const c = checkCondition(walk, args[i], pointerAppend(at, i), depth + 1);
    if (c !== undefined) out.push(c);
  }
  if (walk.errors.length !== before || out.length !== args.length) return undefined;
  return op === 'not' ? { op, args: [out[0] as Condition] } : { op: op as 'and' | 'or', args: out };
}

function checkRule(walk: Walk, node: unknown, pointer: string, seen: Map<string, number>, index: number): Rule | undefined {
  if (!isObject(node)) {
    report(walk, pointer, 'invalid_type', `a rule must be an object {id, effect, when?}, got ${kind(node)}`);
    return undefined;
  }
  const before = walk.errors.length;
  checkFields(walk, node, pointer, ['id', 'effect', 'when']);
  const id = required(walk, node, pointer, 'id');
  if (id !== undefined) {
    const at = pointerAppend(pointer, 'id');
    if (typeof id !== 'string') {
      report(walk, at, 'invalid_type', `id must be a string, got ${kind(id)}`);
    } else if (id.length === 0 || id.length > POLICY_LIMITS.maxRuleIdLength || !RULE_ID.test(id)) {
      report(walk, at, 'invalid_rule_id', `a rule id is 1-${POLICY_LIMITS.maxRuleIdLength} characters of A-Z a-z 0-9 _ . : - starting with a letter or digit`);
    } else {
      const first = seen.get(id);
      if (first !== undefined) report(walk, at, 'duplicate_rule_id', `rule id ${quote(id)} is already used by /rules/${first}`);
      else seen.set(id, index);
    }
  }
  const effect = required(walk, node, pointer, 'effect');
  if (effect !== undefined && (typeof effect !== 'string' || !EFFECTS.has(effect))) {
    report(walk, pointerAppend(pointer, 'effect'), 'invalid_effect', 'effect must be ALLOW, DENY or REQUIRE_APPROVAL');
  }
  const raw = own(node, 'when'); // undefined (not expressible in JSON) counts as absent
  const when = raw !== undefined ? checkCondition(walk, raw, pointerAppend(pointer, 'when'), 1) : undefined;
  if (walk.errors.length !== before) return undefined;
  return when === undefined ? { id: id as string, effect: effect as Effect } : { id: id as string, effect: effect as Effect, when };
}

function validateUnchecked(doc: unknown, submitted: boolean): PolicyValidation {
  const walk: Walk = { errors: [], nodes: 0, full: false, sizeReported: false, submitted };
  if (!isObject(doc)) {
    return { ok: false, errors: [{ pointer: '', code: 'invalid_type', message: `a policy document must be an object {spec_version, rules}, got ${kind(doc)}` }] };
  }
  checkFields(walk, doc, '', ['spec_version', 'rules']);
  const version = required(walk, doc, '', 'spec_version');
  if (version !== undefined) {
    if (typeof version !== 'string') {
      report(walk, '/spec_version', 'invalid_type', `spec_version must be a string, got ${kind(version)}`);
    } else if (!SUPPORTED_SPEC_VERSIONS.includes(version)) {
      report(walk, '/spec_version', 'unsupported_spec_version', `spec_version ${quote(version)} is not supported; supported: ${SUPPORTED_SPEC_VERSIONS.map((v) => `"${v}"`).join(', ')}`);
    }
  }
  const rules = required(walk, doc, '', 'rules');
  const out: Rule[] = [];
  if (rules !== undefined) {
    if (!Array.isArray(rules)) {
      report(walk, '/rules', 'invalid_type', `rules must be an array, got ${kind(rules)}`);
    } else {
      if (rules.length > POLICY_LIMITS.maxRules) {
        report(walk, '/rules', 'too_many_rules', `a document holds at most ${POLICY_LIMITS.maxRules} rules, got ${rules.length}; only the first ${POLICY_LIMITS.maxRules} were checked`);
      }
      const seen = new Map<string, number>();
      const count = Math.min(rules.length, POLICY_LIMITS.maxRules);
      for (let i = 0; i < count && !walk.full; i++) {
        const rule = checkRule(walk, rules[i], `/rules/${i}`, seen, i);
        if (rule !== undefined) out.push(rule);
      }
    }
  }
  if (walk.errors.length > 0) return { ok: false, errors: walk.errors };
  return { ok: true, policy: { spec_version: version as string, rules: out } };
}

const PERCENT_ENCODE = 'percent-encode any other: é as %C3%A9, a space as %20';
const NOT_NORMAL = 'a resource literal must be spelled as a request may spell it (docs/policy-language.md, "a requested resource"), or it matches no request';

/**
 * Validates `doc` (any JSON value) as a policy document. On success the returned policy is
 * a fresh copy holding only the validated members; compile that, not the input. `submitted`: a
 * document saved or simulated now, whose resource literals must be in a request's one spelling;
 * a version stored before that rule goes on validating.
 */
export function validatePolicy(doc: unknown, options: { submitted?: boolean } = {}): PolicyValidation {
  try {
    return validateUnchecked(doc, options.submitted === true);
  } catch {
    // Only reachable with values JSON cannot produce (throwing getters, proxies).
    return { ok: false, errors: [{ pointer: '', code: 'invalid_document', message: 'the document could not be read as JSON data' }] };
  }
}
