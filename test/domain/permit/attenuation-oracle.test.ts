// "Never wider than its parent" against brute force (decision 0301). Pattern covering is compared
// with set inclusion over every string of a small universe (long enough that inclusion there is
// inclusion everywhere); the whole attenuation check with what a link alone admits: a child the
// check accepts must admit no request, and no sequence of requests against its live counters, that
// its parent alone would refuse. Seeds are fixed, so a failure replays.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkAttenuation } from '../../../src/domain/permit/attenuation.ts';
import { checkCoverage } from '../../../src/domain/permit/coverage.ts';
import { checkPermitTime } from '../../../src/domain/permit/check-time.ts';
import { patternCovers, patternMatches } from '../../../src/domain/permit/pattern.ts';
import type { Money, PermitClaims, VerifiedPermit } from '../../../src/domain/permit/types.ts';

const S = 'resource://';
const SEED = { seed: 5, numRuns: 3000 };

/** Every string over `alphabet` of at most `max` characters. */
function strings(alphabet: readonly string[], max: number): string[] {
  const out = [''];
  for (let from = 0, len = 1; len <= max; len++) {
    const to = out.length;
    for (let i = from; i < to; i++) for (const ch of alphabet) out.push(out[i] + ch);
    from = to;
  }
  return out;
}

/** The matcher written again, independently: a regular expression per pattern. */
const escape = (s: string) => s.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
// Strings are compared by UTF-16 code unit, as the service compares them (no "u" flag).
const regexOf = (pattern: string) => new RegExp(pattern.endsWith('*') ? `^${escape(pattern.slice(0, -1))}[^]*$` : `^${escape(pattern)}$`);
const oracleMatches = (pattern: string, resource: string) => regexOf(pattern).test(resource);

/** Child ⊆ parent over the universe; exact when the universe's strings outrun the patterns by one. */
function includedOver(universe: readonly string[], parent: string, child: string): boolean {
  const [p, c] = [regexOf(parent), regexOf(child)];
  return universe.every((r) => !c.test(r) || p.test(r));
}

// Characters a prefix could be confused over: separators, dots, escapes and their hex in both
// cases, a composed and a decomposed "é", half a surrogate pair.
const TRICKY = ['a', 'A', '/', '.', '%', '2', 'e', 'F', 'f', 'é', '\u0301', '\ud83d', '\ude00'];

test('patternCovers is exactly inclusion, over every pattern pair of a small alphabet', () => {
  const alphabet = ['a', '/', '.'];
  const bodies = strings(alphabet, 3);
  const universe = strings(alphabet, 4).map((s) => S + s);
  const patterns = bodies.flatMap((b) => [S + b, `${S + b}*`]);
  for (const r of universe) for (const p of patterns) assert.equal(patternMatches(p, r), oracleMatches(p, r), `${p} on ${r}`);
  for (const parent of patterns) {
    for (const child of patterns) assert.equal(patternCovers(parent, child), includedOver(universe, parent, child), `${child} within ${parent}`);
  }
});

test('patternCovers is exactly inclusion for random patterns over separators, escapes, case and Unicode', () => {
  const body = fc.array(fc.constantFrom(...TRICKY), { maxLength: 3 }).map((cs) => S + cs.join(''));
  const pattern = fc.tuple(body, fc.boolean()).map(([b, star]) => (star ? `${b}*` : b));
  // A witness against inclusion is the child's own text or it and one more character, so the
  // universe needs only the patterns' characters and one other, one longer than the longer body.
  fc.assert(fc.property(pattern, pattern, (parent, child) => {
    const chars = [...new Set([...parent.slice(S.length), ...child.slice(S.length), 'z'])].filter((c) => c !== '*');
    const universe = strings(chars, Math.max(parent.length, child.length) - S.length + 1).map((s) => S + s);
    assert.equal(patternCovers(parent, child), includedOver(universe, parent, child), `${JSON.stringify(child)} within ${JSON.stringify(parent)}`);
  }), SEED);
});

// A grant's dimensions over small domains, so that random children often fall within their parent.
// Resources a request may name (non-empty segments), and patterns: one of them, or any prefix and a "*".
const REQUESTABLE = strings(['a', 'b', '/'], 5).filter((s) => /^[ab]+(\/[ab]+)*$/.test(s)).map((s) => S + s);
const resourcePattern = fc.oneof(
  fc.constantFrom(...REQUESTABLE),
  fc.tuple(fc.constantFrom(...REQUESTABLE), fc.nat({ max: 5 })).map(([r, cut]) => `${r.slice(0, r.length - cut)}*`),
);
const money = fc.option(fc.record({ minor: fc.nat({ max: 6 }), currency: fc.constantFrom('EUR', 'USD') }), { nil: undefined });
const grant = fc.record({
  actions: fc.uniqueArray(fc.constantFrom('pay', 'read', '*'), { minLength: 1, maxLength: 3 }),
  resources: fc.array(resourcePattern, { minLength: 1, maxLength: 3 }),
  max_per_request: money,
  budget: money,
  max_uses: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
  nbf: fc.nat({ max: 3 }),
  span: fc.integer({ min: 1, max: 4 }),
});
type Grant = typeof grant extends fc.Arbitrary<infer G> ? G : never;

function claimsOf(g: Grant): PermitClaims {
  const gavel: PermitClaims['gavel'] = { actions: g.actions, resources: g.resources };
  if (g.max_per_request) gavel.max_per_request = g.max_per_request;
  if (g.budget) gavel.budget = g.budget;
  if (g.max_uses !== undefined) gavel.max_uses = g.max_uses;
  return { iss: 'did:key:zIssuer', sub: 'did:key:zSubject', aud: 'prj', jti: 'j', iat: 0, nbf: g.nbf, exp: g.nbf + g.span, gavel };
}

/** A child made from its parent: each dimension kept, narrowed, or drawn afresh (which may widen). */
const childOf = (parent: Grant) => fc.record({
  actions: fc.oneof(fc.constant(parent.actions), fc.subarray(parent.actions, { minLength: 1 }), grant.map((g) => g.actions)),
  resources: fc.oneof(
    fc.constant(parent.resources),
    // Each parent pattern lengthened (a prefix's text extended, or its "*" dropped): still within.
    fc.tuple(...parent.resources.map((r) => fc.tuple(fc.constantFrom('', 'a', '/b', 'b*'), fc.boolean()).map(([more, drop]) =>
      (r.endsWith('*') ? (drop ? r.slice(0, -1) : r.slice(0, -1) + more + (more.endsWith('*') ? '' : '*')) : r)))),
    fc.array(resourcePattern, { minLength: 1, maxLength: 3 }),
  ),
  max_per_request: fc.oneof(fc.constant(parent.max_per_request), money),
  budget: fc.oneof(fc.constant(parent.budget), money),
  max_uses: fc.oneof(fc.constant(parent.max_uses), fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined })),
  nbf: fc.oneof(fc.constant(parent.nbf), fc.nat({ max: 4 })),
  span: fc.oneof(fc.constant(parent.span), fc.integer({ min: 1, max: 5 })),
});

// Requests drawn near the child's grant, so that many are admitted by it: its actions, resources it
// matches, amounts in its currencies, instants in its window; and now and then anything at all.
function requestNear(c: Grant) {
  const mostly = <T,>(near: fc.Arbitrary<T>, any: fc.Arbitrary<T>) => fc.oneof({ arbitrary: near, weight: 6 }, { arbitrary: any, weight: 1 });
  const actions = c.actions.filter((a) => a !== '*');
  const matched = REQUESTABLE.filter((r) => c.resources.some((p) => patternMatches(p, r)));
  const currency = c.budget?.currency ?? c.max_per_request?.currency ?? 'EUR';
  return fc.record({
    action: mostly(fc.constantFrom(...(actions.length ? actions : ['pay'])), fc.constantFrom('pay', 'read', 'refund')),
    resource: mostly(fc.constantFrom(...(matched.length ? matched : REQUESTABLE)), fc.constantFrom(...REQUESTABLE)),
    amount: mostly(
      fc.record({ minor: fc.nat({ max: 3 }), currency: fc.constant(currency) }),
      fc.option(fc.record({ minor: fc.nat({ max: 7 }), currency: fc.constantFrom('EUR', 'USD', 'GBP') }), { nil: undefined }),
    ),
    at: mostly(fc.integer({ min: c.nbf, max: c.nbf + c.span - 1 }), fc.nat({ max: 9 })),
  });
}

type Request = ReturnType<typeof requestNear> extends fc.Arbitrary<infer R> ? R : never;

/** Whether one link alone, as the service checks it (time, coverage, then its live counters), admits every request in turn. */
function admits(claims: PermitClaims, history: readonly Request[]): boolean {
  const permit = { links: [{ commitment: 'c', claims }], not_before: claims.nbf, expires_at: claims.exp } as VerifiedPermit;
  let spent = 0;
  let uses = 0;
  for (const { at, amount, ...r } of history) {
    if (!checkPermitTime(permit, new Date(at * 1000)).ok) return false;
    if (!checkCoverage(permit, { ...r, ...(amount ? { amount } : {}) }).ok) return false;
    spent += amount?.minor ?? 0;
    uses += 1;
    const { budget, max_uses } = claims.gavel;
    if ((budget && spent > (budget as Money).minor) || (max_uses !== undefined && uses > max_uses)) return false;
  }
  return true;
}

test('a child checkAttenuation accepts admits no request sequence its parent alone refuses', () => {
  let accepted = 0;
  let admitted = 0;
  const drawn = grant.chain((parent) => childOf(parent).chain((child) =>
    fc.array(requestNear(child), { minLength: 1, maxLength: 3 }).map((history) => [parent, child, history] as const)));
  fc.assert(fc.property(drawn, ([pg, cg, history]) => {
    const parent = claimsOf(pg);
    const child = claimsOf(cg);
    if (checkAttenuation(parent, child, 1) !== null) return;
    accepted++;
    if (!admits(child, history)) return;
    admitted++;
    assert.ok(admits(parent, history), `${JSON.stringify(child.gavel)} within ${JSON.stringify(parent.gavel)} admits ${JSON.stringify(history)}`);
  }), { seed: 5, numRuns: 40_000 });
  assert.ok(accepted > 4_000 && admitted > 500, `enough accepted children and admitted histories to mean something: ${accepted}, ${admitted}`);
});

test('a resource list is accepted only when each child pattern lies within the union of the parent\'s', () => {
  const universe = strings(['a', 'b', '/'], 5).map((s) => S + s);
  const list = fc.array(resourcePattern, { minLength: 1, maxLength: 3 });
  fc.assert(fc.property(list, list, (parentList, childList) => {
    const accepted = childList.every((c) => parentList.some((p) => patternCovers(p, c)));
    if (!accepted) return;
    for (const r of universe) if (childList.some((c) => oracleMatches(c, r))) assert.ok(parentList.some((p) => oracleMatches(p, r)), r);
  }), SEED);
});
