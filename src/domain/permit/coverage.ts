// Does a verified permit cover one request? Pure; budget and use counts are spent live by
// the service (see live-limits.ts). Every link is checked, not only the leaf, so a permit
// assembled by hand cannot be wider than its ancestors either.
import { formatMoney, isMoney } from './money.ts';
import { anyPatternMatches } from './pattern.ts';
import type { Money, PermitClaims, VerifiedPermit } from './types.ts';
import { isRequestResource } from '../policy/formats.ts';

export interface CoverageRequest {
  action: string;
  resource: string;
  amount?: Money;
}

export type CoverageCheck =
  | 'action_not_covered'
  | 'resource_invalid'
  | 'resource_not_covered'
  | 'amount_invalid'
  | 'amount_required'
  | 'currency_mismatch'
  | 'amount_exceeds_per_request'
  | 'amount_exceeds_budget';

export type CoverageResult = { ok: true } | { ok: false; check: CoverageCheck; detail: string; link?: number };


function checkLink(c: PermitClaims, request: CoverageRequest, link: number): CoverageResult {
  const g = c.gavel;
  if (!g.actions.includes('*') && !g.actions.includes(request.action)) {
    return { ok: false, check: 'action_not_covered', detail: `the permit does not grant action ${JSON.stringify(request.action)}`, link };
  }
  if (!anyPatternMatches(g.resources, request.resource)) {
    return { ok: false, check: 'resource_not_covered', detail: 'the permit does not cover the requested resource', link };
  }
  const limits = [g.max_per_request, g.budget].filter((m): m is Money => m !== undefined);
  if (request.amount === undefined) {
    // Fail closed: a permit that limits money cannot bound a request whose amount is unknown.
    if (limits.length > 0) return { ok: false, check: 'amount_required', detail: 'the permit limits money, so the request must state an amount', link };
    return { ok: true };
  }
  const amount = request.amount;
  const other = limits.find((m) => m.currency !== amount.currency);
  if (other !== undefined) {
    return { ok: false, check: 'currency_mismatch', detail: `the request is in ${amount.currency}, the permit limits ${other.currency}`, link };
  }
  if (g.max_per_request !== undefined && amount.minor > g.max_per_request.minor) {
    return { ok: false, check: 'amount_exceeds_per_request', detail: `${formatMoney(amount)} exceeds the per-request limit of ${formatMoney(g.max_per_request)}`, link };
  }
  if (g.budget !== undefined && amount.minor > g.budget.minor) {
    // Decidable without the store: one request larger than the whole budget can never fit.
    return { ok: false, check: 'amount_exceeds_budget', detail: `${formatMoney(amount)} exceeds the whole budget of ${formatMoney(g.budget)}`, link };
  }
  return { ok: true };
}

export function checkCoverage(permit: VerifiedPermit, request: CoverageRequest): CoverageResult {
  if (typeof request !== 'object' || request === null) return { ok: false, check: 'action_not_covered', detail: 'no request to cover' };
  const { action, resource, amount } = request;
  if (typeof action !== 'string' || action.length === 0) return { ok: false, check: 'action_not_covered', detail: 'the action must be a non-empty string' };
  // Dot segments, structural escapes and the like could make a prefix pattern match a path
  // outside it downstream (`resource://pay/eu/..%2Fus` under `resource://pay/eu/*`).
  if (!isRequestResource(resource)) {
    return { ok: false, check: 'resource_invalid', detail: 'the resource must be a resource:// URI of at most 512 characters, without *, dot segments or an encoded "/", "\\", "%" or control character' };
  }
  if (amount !== undefined && !isMoney(amount)) {
    return { ok: false, check: 'amount_invalid', detail: 'the amount must be Money {minor: non-negative integer, currency: three capital letters}' };
  }
  for (const [i, link] of permit.links.entries()) {
    const r = checkLink(link.claims, request, i);
    if (!r.ok) return r;
  }
  return { ok: true };
}
