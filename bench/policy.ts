// Policy engine benchmark (not a test): Gavel's compiled evaluator against Cedar
// (@cedar-policy/cedar-wasm, pre-parsed policy set) on the same 20-rule workload, then
// Gavel alone at 10 to 10,000 rules. Run: node bench/policy.ts
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { compilePolicy, evaluate, validatePolicy, type PolicyDocument, type PolicyInput } from '../src/domain/policy/index.ts';
import { secondsFromEnv } from './lib/env-count.ts';

const FROM = '2025-01-01T00:00:00Z';
const UNTIL = '2025-07-01T00:00:00Z';
const FROM_MS = Date.parse(FROM);
const UNTIL_MS = Date.parse(UNTIL);
const SECONDS = secondsFromEnv('BENCH_SECONDS', 1.5);

// Deterministic pseudo-random numbers (mulberry32) so every run measures the same requests.
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Kind = 'pay' | 'agent' | 'docs';
interface Spec { kind: Kind; n: number }

/** Rule i of a generated policy: 8:6:6 mix of the three shapes the issue names. */
function specs(count: number): Spec[] {
  const out: Spec[] = [];
  for (let i = 0; i < count; i++) {
    const r = i % 10;
    out.push({ kind: r < 4 ? 'pay' : r < 7 ? 'agent' : 'docs', n: i });
  }
  return out;
}

function gavelDocument(count: number): PolicyDocument {
  const rules = specs(count).map(({ kind, n }) => {
    if (kind === 'pay') {
      return { id: `pay-${n}`, effect: 'ALLOW', when: { op: 'and', args: [
        { op: 'eq', input: 'action', value: `pay.${n}` },
        { op: 'lte', input: 'amount.minor', value: 10_000 + n, currency: 'EUR' },
      ] } };
    }
    if (kind === 'agent') return { id: `deny-${n}`, effect: 'DENY', when: { op: 'eq', input: 'agent', value: `did:key:zBlocked${n}` } };
    return { id: `docs-${n}`, effect: 'ALLOW', when: { op: 'and', args: [
      { op: 'matches_resource', input: 'resource', value: `resource://docs/team${n}/*` },
      { op: 'within_time_window', input: 'request_time', from: FROM, until: UNTIL },
    ] } };
  });
  const result = validatePolicy({ spec_version: '1', rules });
  if (!result.ok) throw new Error(`benchmark policy invalid: ${JSON.stringify(result.errors.slice(0, 3))}`);
  return result.policy;
}

function cedarPolicies(count: number): string {
  return specs(count).map(({ kind, n }) => {
    if (kind === 'pay') {
      return `@id("pay-${n}") permit(principal, action == Action::"pay.${n}", resource) when { context has amount_minor && context.amount_currency == "EUR" && context.amount_minor <= ${10_000 + n} };`;
    }
    if (kind === 'agent') return `@id("deny-${n}") forbid(principal == Agent::"did:key:zBlocked${n}", action, resource);`;
    return `@id("docs-${n}") permit(principal, action, resource) when { context.resource like "resource://docs/team${n}/*" && context.request_time >= ${FROM_MS} && context.request_time < ${UNTIL_MS} };`;
  }).join('\n');
}

/** Varied requests: about half aimed at some rule (allowed or over the limit), the rest misses and blocked agents. */
function requests(ruleCount: number, total: number, seed: number): PolicyInput[] {
  const random = rng(seed);
  const all = specs(ruleCount);
  const byKind = (kind: Kind) => all.filter((s) => s.kind === kind).map((s) => s.n);
  const kinds = { pay: byKind('pay'), agent: byKind('agent'), docs: byKind('docs') };
  const pick = (kind: Kind) => kinds[kind][Math.floor(random() * kinds[kind].length)] as number;
  const out: PolicyInput[] = [];
  for (let i = 0; i < total; i++) {
    const blocked = random() < 0.2;
    const agent = blocked ? `did:key:zBlocked${pick('agent')}` : `did:key:zAgent${Math.floor(random() * 50)}`;
    const time = FROM_MS + Math.floor((random() * 1.2 - 0.1) * (UNTIL_MS - FROM_MS));
    if (random() < 0.5) {
      const n = random() < 0.9 ? pick('pay') : 999_999;
      out.push({ action: `pay.${n}`, resource: `resource://shop/items/${i % 97}`, agent, amount: { minor: Math.floor(random() * 12_000) + n, currency: random() < 0.9 ? 'EUR' : 'USD' }, request_time: time });
    } else {
      const n = random() < 0.9 ? pick('docs') : 999_999;
      out.push({ action: 'read', resource: `resource://docs/team${n}/reports/${i % 31}.pdf`, agent, request_time: time });
    }
  }
  return out;
}

function cedarCall(input: PolicyInput, id: string): cedar.StatefulAuthorizationCall {
  const context: Record<string, cedar.CedarValueJson> = { resource: input.resource ?? '', request_time: input.request_time ?? 0 };
  if (input.amount !== undefined) {
    context.amount_minor = input.amount.minor;
    context.amount_currency = input.amount.currency;
  }
  return {
    principal: { type: 'Agent', id: input.agent ?? '' },
    action: { type: 'Action', id: input.action ?? '' },
    resource: { type: 'Resource', id: input.resource ?? '' },
    context,
    preparsedPolicySetId: id,
    entities: [],
  };
}

/** Runs `fn` over the inputs round-robin for about SECONDS; returns decisions per second. */
function rate(inputs: readonly unknown[], fn: (input: never) => unknown): number {
  let sink = 0;
  for (let i = 0; i < Math.min(inputs.length, 2_000); i++) sink += fn(inputs[i] as never) === undefined ? 0 : 1; // warm-up
  let done = 0;
  const start = process.hrtime.bigint();
  const budget = BigInt(Math.round(SECONDS * 1e9));
  let elapsed = 0n;
  while (elapsed < budget) {
    for (let i = 0; i < inputs.length; i++) sink += fn(inputs[i] as never) === undefined ? 0 : 1;
    done += inputs.length;
    elapsed = process.hrtime.bigint() - start;
  }
  if (sink < 0) console.log(sink);
  return done / (Number(elapsed) / 1e9);
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pad = (s: string, n: number) => s.padStart(n);

console.log(`Node ${process.version}, Cedar ${cedar.getCedarVersion()} (cedar-wasm ${cedar.getCedarSDKVersion()}), ${SECONDS}s per measurement\n`);

// 1. Gavel vs Cedar on the 20-rule workload.
{
  const policy = gavelDocument(20);
  const compiled = compilePolicy(policy);
  const parsed = cedar.preparsePolicySet('bench20', { staticPolicies: cedarPolicies(20) });
  if (parsed.type !== 'success') throw new Error(`cedar parse failed: ${JSON.stringify(parsed.errors)}`);
  const inputs = requests(20, 1_000, 20);
  const calls = inputs.map((input) => cedarCall(input, 'bench20'));

  // Same decisions on ALLOW vs not-ALLOW (Cedar has no REQUIRE_APPROVAL and reports
  // indeterminate conditions as errors that skip the policy; both deny in those cases here).
  let agree = 0;
  const tally = new Map<string, number>();
  for (let i = 0; i < inputs.length; i++) {
    const g = evaluate(compiled, inputs[i] as PolicyInput);
    const c = cedar.statefulIsAuthorized(calls[i] as cedar.StatefulAuthorizationCall);
    if (c.type !== 'success') throw new Error(`cedar failed: ${JSON.stringify(c.errors)}`);
    if ((g.decision === 'ALLOW') === (c.response.decision === 'allow')) agree++;
    tally.set(g.reason_code, (tally.get(g.reason_code) ?? 0) + 1);
  }
  const gavel = rate(inputs, (input: PolicyInput) => evaluate(compiled, input));
  const cedarRate = rate(calls, (call: cedar.StatefulAuthorizationCall) => cedar.statefulIsAuthorized(call));
  console.log('20-rule workload (8 action+amount permits, 6 agent denies, 6 resource-pattern+time-window permits), 1,000 varied requests');
  console.log(`  decisions agreeing with Cedar: ${agree}/${inputs.length}; Gavel reasons: ${[...tally].map(([k, v]) => `${k} ${v}`).join(', ')}`);
  console.log(`  ${'engine'.padEnd(34)}${pad('decisions/s', 14)}${pad('µs/decision', 14)}`);
  console.log(`  ${'Gavel (compiled, indexed)'.padEnd(34)}${pad(fmt(gavel), 14)}${pad(fmt(1e6 / gavel, 3), 14)}`);
  console.log(`  ${'Cedar-wasm (pre-parsed policy set)'.padEnd(34)}${pad(fmt(cedarRate), 14)}${pad(fmt(1e6 / cedarRate, 3), 14)}`);
  console.log(`  ratio Gavel / Cedar: ${fmt(gavel / cedarRate, 1)}x (target >= 50x)\n`);
}

// 2. Gavel alone as the rule count grows.
{
  console.log('Gavel at growing rule counts (same 8:6:6 mix, 1,000 varied requests each)');
  console.log(`  ${'rules'.padStart(7)}${pad('validate ms', 13)}${pad('compile ms', 12)}${pad('decisions/s', 14)}${pad('µs/decision', 13)}${pad('mean steps', 12)}`);
  for (const count of [10, 100, 1_000, 10_000]) {
    const raw = JSON.parse(JSON.stringify(gavelDocument(count))) as unknown;
    let t = performance.now();
    const validated = validatePolicy(raw);
    const validateMs = performance.now() - t;
    if (!validated.ok) throw new Error('invalid');
    t = performance.now();
    const compiled = compilePolicy(validated.policy);
    const compileMs = performance.now() - t;
    const inputs = requests(count, 1_000, count);
    const steps = inputs.reduce((sum, input) => sum + evaluate(compiled, input).steps, 0) / inputs.length;
    const r = rate(inputs, (input: PolicyInput) => evaluate(compiled, input));
    console.log(`  ${fmt(count).padStart(7)}${pad(fmt(validateMs, 1), 13)}${pad(fmt(compileMs, 1), 12)}${pad(fmt(r), 14)}${pad(fmt(1e6 / r, 3), 13)}${pad(fmt(steps, 1), 12)}`);
  }
}

// 3. Worst case: 10,000 rules none of which the index can bucket (each reads only the amount).
{
  const rules = Array.from({ length: 10_000 }, (_, n) => ({ id: `amount-${n}`, effect: 'ALLOW', when: { op: 'between', input: 'amount.minor', min: n * 10, max: n * 10 + 5, currency: 'EUR' } }));
  const validated = validatePolicy({ spec_version: '1', rules });
  if (!validated.ok) throw new Error('invalid');
  const compiled = compilePolicy(validated.policy);
  const random = rng(7);
  const inputs: PolicyInput[] = Array.from({ length: 200 }, () => ({ action: 'pay', agent: 'did:key:zA', resource: 'resource://shop/x', amount: { minor: Math.floor(random() * 100_000), currency: 'EUR' } }));
  const r = rate(inputs, (input: PolicyInput) => evaluate(compiled, input));
  console.log(`\nWorst case, 10,000 rules the index cannot bucket (full scan): ${fmt(r)} decisions/s, ${fmt(1e6 / r, 1)} µs/decision`);
}
