// What the service must check and spend against its store for each use of a permit. Spending
// through a delegated link spends every ancestor too: otherwise an agent could delegate its
// full budget to several agents (or to itself again) and multiply it.
import type { Money, VerifiedPermit } from './types.ts';

export interface LiveCounter {
  /** The link whose counters these are. */
  commitment: string;
  /** 0 = root. */
  link: number;
  /** Cumulative money this link may spend, across every descendant. */
  budget?: Money;
  /** Uses this link may authorize, across every descendant. */
  max_uses?: number;
}

export interface LiveLimits {
  /** Every commitment root..leaf; if any is revoked, the permit is revoked. */
  revocation: string[];
  /**
   * Links carrying a budget or use count. For one allowed use of amount A, atomically (one
   * transaction), for every entry: spent + A <= budget and uses + 1 <= max_uses; then add
   * to all of them. Any overspend denies the request and spends nothing.
   */
  counters: LiveCounter[];
}

export function liveLimits(permit: VerifiedPermit): LiveLimits {
  const counters: LiveCounter[] = [];
  for (const [i, l] of permit.links.entries()) {
    const { budget, max_uses } = l.claims.gavel;
    if (budget === undefined && max_uses === undefined) continue;
    counters.push({
      commitment: l.commitment,
      link: i,
      ...(budget !== undefined ? { budget: { ...budget } } : {}),
      ...(max_uses !== undefined ? { max_uses } : {}),
    });
  }
  return { revocation: [...permit.chain], counters };
}
