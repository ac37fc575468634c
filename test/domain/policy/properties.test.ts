// Property tests (fast-check): meet laws, order independence, determinism, agreement of the
// indexed evaluator with a direct interpreter of the document, and no throw on anything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compilePolicy, evaluate, meet, parseResourcePattern, parseTimestamp, validatePolicy, type Condition, type Effect, type LeafCondition, type PolicyDocument, type PolicyInput } from '../../../src/domain/policy/index.ts';
import { isResourceUri, isDid } from '../../../src/domain/policy/formats.ts';

const effect = fc.constantFrom<Effect>('ALLOW', 'DENY', 'REQUIRE_APPROVAL');
const RUNS = { numRuns: 300 };

test('meet is commutative, associative and idempotent; DENY absorbs, ALLOW is the identity', () => {
  fc.assert(fc.property(effect, effect, effect, (a, b, c) => {
    assert.equal(meet(a, b), meet(b, a));
    assert.equal(meet(meet(a, b), c), meet(a, meet(b, c)));
    assert.equal(meet(a, a), a);
    assert.equal(meet(a, 'DENY'), 'DENY');
    assert.equal(meet(a, 'ALLOW'), a);
    assert.ok(meet(a, b) === a || meet(a, b) === b);
  }));
});

// A small vocabulary so generated rules and requests actually meet.
const ACTIONS = ['pay', 'read', 'write'];
const AGENTS = ['did:key:zA', 'did:key:zB', 'did:web:example.com'];
const RESOURCES = ['resource://docs/a', 'resource://docs/b/c', 'resource://shop/x', 'resource://docsx'];
const PATTERNS = ['resource://docs/*', 'resource://docs/b/*', 'resource://shop/x', 'resource://shop/x*', 'resource://*', 'resource://docs*'];
const TIMES = ['2025-01-01T00:00:00Z', '2025-01-01T12:00:00Z', '2025-01-02T00:00:00Z', '2025-01-03T00:00:00+02:00'];
const CURRENCIES = ['EUR', 'USD'];
const COMMITMENTS = ['a'.repeat(64), 'b'.repeat(64)];
const FINALITY = ['final', 'pending'];

const cmpOp = fc.constantFrom('eq', 'neq', 'lt', 'lte', 'gt', 'gte');
const eqOp = fc.constantFrom('eq', 'neq');
const setOp = fc.constantFrom('in', 'not_in');
const amount = fc.integer({ min: 0, max: 1000 });
const depth = fc.integer({ min: 0, max: 4 });
const listOf = <T>(arb: fc.Arbitrary<T>) => fc.array(arb, { minLength: 1, maxLength: 3 });

const leaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({ op: eqOp, input: fc.constant('action'), value: fc.constantFrom(...ACTIONS) }),
  fc.record({ op: setOp, input: fc.constant('action'), values: listOf(fc.constantFrom(...ACTIONS)) }),
  fc.record({ op: eqOp, input: fc.constant('agent'), value: fc.constantFrom(...AGENTS) }),
  fc.record({ op: setOp, input: fc.constant('agent'), values: listOf(fc.constantFrom(...AGENTS)) }),
  fc.record({ op: eqOp, input: fc.constant('resource'), value: fc.constantFrom(...RESOURCES) }),
  fc.record({ op: setOp, input: fc.constant('resource'), values: listOf(fc.constantFrom(...RESOURCES)) }),
  fc.record({ op: fc.constant('matches_resource'), input: fc.constant('resource'), value: fc.constantFrom(...PATTERNS) }),
  fc.record({ op: cmpOp, input: fc.constant('amount.minor'), value: amount, currency: fc.constantFrom(...CURRENCIES) }),
  fc.tuple(amount, amount, fc.constantFrom(...CURRENCIES)).map(([a, b, currency]) => ({ op: 'between', input: 'amount.minor', min: Math.min(a, b), max: Math.max(a, b), currency })),
  fc.record({ op: setOp, input: fc.constant('amount.minor'), values: listOf(amount), currency: fc.constantFrom(...CURRENCIES) }),
  fc.record({ op: eqOp, input: fc.constant('amount.currency'), value: fc.constantFrom(...CURRENCIES) }),
  fc.record({ op: setOp, input: fc.constant('amount.currency'), values: listOf(fc.constantFrom(...CURRENCIES)) }),
  fc.record({ op: cmpOp, input: fc.constant('request_time'), value: fc.constantFrom(...TIMES) }),
  fc.tuple(fc.constantFrom(...TIMES), fc.constantFrom(...TIMES)).filter(([a, b]) => parseTimestamp(a)! < parseTimestamp(b)!).map(([from, until]) => ({ op: 'within_time_window', input: 'request_time', from, until })),
  fc.record({ op: cmpOp, input: fc.constant('delegation_depth'), value: depth }),
  fc.tuple(depth, depth).map(([a, b]) => ({ op: 'between', input: 'delegation_depth', min: Math.min(a, b), max: Math.max(a, b) })),
  fc.record({ op: setOp, input: fc.constant('permit_commitment'), values: listOf(fc.constantFrom(...COMMITMENTS)) }),
  fc.record({ op: eqOp, input: fc.constant('root_permit_commitment'), value: fc.constantFrom(...COMMITMENTS) }),
  fc.record({ op: setOp, input: fc.constant('root_permit_commitment'), values: listOf(fc.constantFrom(...COMMITMENTS)) }),
  fc.record({ op: eqOp, input: fc.constant('backend_finality'), value: fc.constantFrom(...FINALITY) }),
);

const condition: fc.Arbitrary<unknown> = fc.letrec<{ c: unknown }>((tie) => ({
  c: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.record({ op: fc.constantFrom('and', 'or'), args: fc.array(tie('c'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ op: fc.constant('not'), args: tie('c').map((c) => [c]) }),
  ),
})).c;

const documentArb = fc.array(fc.record({ effect, when: fc.option(condition, { nil: undefined, freq: 4 }) }), { maxLength: 8 })
  .map((rules) => ({ spec_version: '1', rules: rules.map((r, i) => (r.when === undefined ? { id: `r${i}`, effect: r.effect } : { id: `r${i}`, effect: r.effect, when: r.when })) }));

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(fc.oneof({ weight: 9, arbitrary: arb }, { weight: 1, arbitrary: fc.anything() as fc.Arbitrary<unknown> }), { nil: undefined, freq: 5 });
const inputArb = fc.record({
  action: maybe(fc.constantFrom(...ACTIONS)),
  agent: maybe(fc.constantFrom(...AGENTS)),
  resource: maybe(fc.constantFrom(...RESOURCES, 'resource://docs/../shop/x')),
  amount: maybe(fc.record({ minor: amount, currency: fc.constantFrom(...CURRENCIES) })),
  request_time: maybe(fc.constantFrom(...TIMES).map((t) => parseTimestamp(t)! + 1)),
  delegation_depth: maybe(depth),
  permit_commitment: maybe(fc.constantFrom(...COMMITMENTS)),
  root_permit_commitment: maybe(fc.constantFrom(...COMMITMENTS)),
  backend_finality: maybe(fc.constantFrom(...FINALITY)),
}, { requiredKeys: [] }) as fc.Arbitrary<PolicyInput>;

function valid(doc: unknown): PolicyDocument {
  const result = validatePolicy(doc);
  if (!result.ok) throw new Error(`generated document invalid: ${JSON.stringify(result.errors)}`);
  return result.policy;
}

// ---- A direct interpreter of the document: no index, no compilation. ----
type Truth = 'T' | 'F' | 'missing' | 'invalid' | 'currency';
const RANK = { missing: 1, invalid: 2, currency: 3 } as const;

function read(input: PolicyInput, name: string): { ok: true; v: string | number } | { ok: false; why: 'missing' | 'invalid' } {
  const raw = input as Record<string, unknown>;
  const field = name.startsWith('amount.') ? raw.amount : raw[name];
  if (field === undefined) return { ok: false, why: 'missing' };
  if (name.startsWith('amount.')) {
    const a = field as { minor?: unknown; currency?: unknown } | null;
    const ok = typeof a === 'object' && a !== null && Number.isSafeInteger(a.minor) && (a.minor as number) >= 0 && typeof a.currency === 'string' && /^[A-Z]{3}$/.test(a.currency);
    if (!ok) return { ok: false, why: 'invalid' };
    return { ok: true, v: name === 'amount.minor' ? (a.minor as number) : (a.currency as string) };
  }
  const checks: Record<string, (x: unknown) => boolean> = {
    action: (x) => typeof x === 'string' && /^[\x21-\x7e]{1,64}$/.test(x),
    agent: isDid,
    resource: isResourceUri,
    request_time: Number.isSafeInteger,
    delegation_depth: (x) => Number.isSafeInteger(x) && (x as number) >= 0,
    permit_commitment: (x) => typeof x === 'string' && /^[0-9a-f]{64}$/.test(x),
    root_permit_commitment: (x) => typeof x === 'string' && /^[0-9a-f]{64}$/.test(x),
    backend_finality: (x) => typeof x === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(x),
  };
  return checks[name]!(field) ? { ok: true, v: field as string | number } : { ok: false, why: 'invalid' };
}

function interpret(node: Condition, input: PolicyInput): Truth {
  if (node.op === 'and' || node.op === 'or') {
    const c = node;
    const results = c.args.map((a) => interpret(a, input));
    const decisive = c.op === 'and' ? 'F' : 'T';
    if (results.includes(decisive)) return decisive;
    const unknowns = results.filter((r) => r !== 'T' && r !== 'F') as ('missing' | 'invalid' | 'currency')[];
    if (unknowns.length === 0) return c.op === 'and' ? 'T' : 'F';
    return unknowns.reduce((a, b) => (RANK[a] >= RANK[b] ? a : b));
  }
  if (node.op === 'not') {
    const r = interpret(node.args[0], input);
    return r === 'T' ? 'F' : r === 'F' ? 'T' : r;
  }
  const c = node as LeafCondition;
  const got = read(input, c.input);
  if (!got.ok) return got.why;
  if (c.input === 'amount.minor') {
    const currency = read(input, 'amount.currency');
    if (!currency.ok || currency.v !== (c as { currency?: string }).currency) return 'currency';
  }
  const lit = (x: string | number) => (c.input === 'request_time' ? parseTimestamp(x)! : x);
  const v = got.v;
  let holds: boolean;
  switch (c.op) {
    case 'eq': holds = v === lit(c.value); break;
    case 'neq': holds = v !== lit(c.value); break;
    case 'lt': holds = v < lit(c.value); break;
    case 'lte': holds = v <= lit(c.value); break;
    case 'gt': holds = v > lit(c.value); break;
    case 'gte': holds = v >= lit(c.value); break;
    case 'between': holds = v >= lit(c.min) && v <= lit(c.max); break;
    case 'in': holds = c.values.map(lit).includes(v); break;
    case 'not_in': holds = !c.values.map(lit).includes(v); break;
    case 'matches_resource': {
      const p = parseResourcePattern(c.value)!;
      holds = p.kind === 'exact' ? v === p.uri : String(v).startsWith(p.prefix);
      break;
    }
    case 'within_time_window': holds = (v as number) >= parseTimestamp(c.from)! && (v as number) < parseTimestamp(c.until)!; break;
  }
  return holds ? 'T' : 'F';
}

function reference(doc: PolicyDocument, input: PolicyInput) {
  const order = { DENY: 0, REQUIRE_APPROVAL: 1, ALLOW: 2 } as const;
  const matched: string[] = [];
  const unknown: string[] = [];
  let m: Effect | undefined;
  let uMin: Effect | undefined;
  const causes: { id: string; effect: Effect; why: 'missing' | 'invalid' | 'currency' }[] = [];
  for (const rule of doc.rules) {
    const r = rule.when === undefined ? 'T' : interpret(rule.when, input);
    if (r === 'T') { matched.push(rule.id); m = m === undefined ? rule.effect : meet(m, rule.effect); }
    else if (r !== 'F') {
      unknown.push(rule.id);
      uMin = uMin === undefined ? rule.effect : meet(uMin, rule.effect);
      causes.push({ id: rule.id, effect: rule.effect, why: r });
    }
  }
  // The reason names a cause that mattered: of a rule that could change the decision.
  let worst: 'missing' | 'invalid' | 'currency' | undefined;
  for (const c of causes) {
    if (m !== undefined && order[c.effect] >= order[m]) continue;
    worst = worst === undefined || RANK[c.why] > RANK[worst] ? c.why : worst;
  }
  let decision: Effect;
  let reason: string;
  const reasonOf = { missing: 'indeterminate_missing_input', invalid: 'indeterminate_invalid_input', currency: 'indeterminate_currency_mismatch' } as const;
  if (m === 'DENY') [decision, reason] = ['DENY', 'policy_deny'];
  else if (worst !== undefined && (m === undefined || order[uMin!] < order[m])) {
    // Named in the detail: each rule that could change the decision, with its own cause.
    const failed_closed_on = causes.filter((c) => m === undefined || order[c.effect] < order[m]).map((c) => ({ id: c.id, cause: reasonOf[c.why] }));
    return { decision: 'DENY', reason_code: reasonOf[worst], matched_rules: matched, indeterminate_rules: unknown, failed_closed_on };
  } else if (m === undefined) [decision, reason] = ['DENY', 'no_matching_rule'];
  else [decision, reason] = [m, m === 'ALLOW' ? 'policy_allow' : 'policy_require_approval'];
  return { decision, reason_code: reason, matched_rules: matched, indeterminate_rules: unknown };
}

test('generated documents validate, and the indexed evaluator agrees with a direct interpreter', () => {
  fc.assert(fc.property(documentArb, inputArb, (doc, input) => {
    const policy = valid(doc);
    const { steps, ...result } = evaluate(compilePolicy(policy), input);
    assert.deepEqual(result, reference(policy, input));
    assert.ok(Number.isSafeInteger(steps) && steps >= 0);
  }), { numRuns: 1000 });
});

test('rule order never changes the decision, the reason or the step count', () => {
  fc.assert(fc.property(documentArb, inputArb, fc.infiniteStream(fc.nat()), (doc, input, stream) => {
    const policy = valid(doc);
    const keys = [...stream.take(policy.rules.length)];
    const shuffled = { ...policy, rules: policy.rules.map((r, i) => ({ r, k: keys[i]! })).sort((a, b) => a.k - b.k).map((x) => x.r) };
    const a = evaluate(compilePolicy(policy), input);
    const b = evaluate(compilePolicy(shuffled), input);
    assert.equal(a.decision, b.decision);
    assert.equal(a.reason_code, b.reason_code);
    assert.equal(a.steps, b.steps);
    assert.deepEqual([...a.matched_rules].sort(), [...b.matched_rules].sort());
  }), RUNS);
});

test('evaluation is deterministic: same document and input, same result and steps', () => {
  fc.assert(fc.property(documentArb, inputArb, (doc, input) => {
    const policy = valid(doc);
    const first = evaluate(compilePolicy(policy), input);
    assert.deepEqual(evaluate(compilePolicy(valid(JSON.parse(JSON.stringify(doc)))), structuredClone(input)), first);
  }), RUNS);
});

test('validation and evaluation never throw on arbitrary values', () => {
  const compiled = compilePolicy(valid({ spec_version: '1', rules: [
    { id: 'a', effect: 'ALLOW', when: { op: 'and', args: [{ op: 'eq', input: 'action', value: 'pay' }, { op: 'lt', input: 'amount.minor', value: 10, currency: 'EUR' }] } },
    { id: 'b', effect: 'DENY', when: { op: 'matches_resource', input: 'resource', value: 'resource://x/*' } },
  ] }));
  fc.assert(fc.property(fc.anything({ withNullPrototype: true, withObjectString: true, maxDepth: 6 }), (value) => {
    const v = validatePolicy(value);
    assert.equal(typeof v.ok, 'boolean');
    const r = evaluate(compiled, value as PolicyInput);
    assert.notEqual(r.decision, 'ALLOW');
  }), { numRuns: 1000 });
  // Mutated documents: valid shapes with arbitrary values spliced in.
  fc.assert(fc.property(documentArb, fc.jsonValue(), fc.nat(), (doc, junk, at) => {
    const text = JSON.stringify(doc);
    const spliced = text.replace(/"(value|values|min|max|from|until|args|op|input|currency)":/g, (m, _k, offset: number) => (offset % 7 === at % 7 ? `"${_k}":${JSON.stringify(junk)},"_":` : m));
    let parsed: unknown;
    try { parsed = JSON.parse(spliced); } catch { return; }
    const v = validatePolicy(parsed);
    if (v.ok) evaluate(compilePolicy(v.policy), {});
  }), RUNS);
});
