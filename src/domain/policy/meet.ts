// Effects form a chain DENY < REQUIRE_APPROVAL < ALLOW; combining matched rules takes the
// meet (greatest lower bound): DENY absorbs, ALLOW is the identity, and REQUIRE_APPROVAL is
// a value of its own, never an ALLOW with a flag.
import type { Effect } from './types.ts';

/** Rank in the chain; lower is more restrictive. */
export const EFFECT_RANK: Readonly<Record<Effect, number>> = { DENY: 0, REQUIRE_APPROVAL: 1, ALLOW: 2 };
export const EFFECT_BY_RANK: readonly Effect[] = ['DENY', 'REQUIRE_APPROVAL', 'ALLOW'];

/** The more restrictive of two effects. Commutative, associative, idempotent. */
export function meet(a: Effect, b: Effect): Effect {
  return EFFECT_RANK[a] <= EFFECT_RANK[b] ? a : b;
}

/** Meet of any number of effects; ALLOW (the identity) for none. */
export function meetAll(effects: Iterable<Effect>): Effect {
  let result: Effect = 'ALLOW';
  for (const effect of effects) result = meet(result, effect);
  return result;
}
