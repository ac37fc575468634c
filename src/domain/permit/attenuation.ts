// "Never wider than its parent": each dimension of a delegated link must be a subset of
// (or at most) its parent's. Used by verification and, early, by delegatePermit.
import { formatMoney } from './money.ts';
import { patternCovers } from './pattern.ts';
import type { GavelConstraints, Money, PermitClaims, PermitFailure, WidenedDimension } from './types.ts';
import { fail } from './types.ts';

function widened(dimension: WidenedDimension, detail: string, link: number): PermitFailure {
  return fail('delegation_widened', detail, { link, dimension });
}

/** The currencies a link limits money in (none when it limits no money). */
const limitedCurrencies = (g: GavelConstraints): string[] => [g.max_per_request, g.budget].flatMap((m) => (m === undefined ? [] : [m.currency]));

/**
 * A parent limit binds the child: the child must carry one, in the same currency, no larger. A
 * child limit the parent does not set narrows only in a currency the parent limits money in (when
 * it limits any): in another no amount of the child's compares with the parent's limits.
 */
function moneyWithin(parent: Money | undefined, child: Money | undefined, parentCurrencies: readonly string[]): string | null {
  if (parent === undefined) {
    if (child === undefined || parentCurrencies.length === 0 || parentCurrencies.includes(child.currency)) return null;
    return `the child limits ${child.currency}, a currency the parent does not limit (it limits ${[...new Set(parentCurrencies)].join(' and ')}): not comparable`;
  }
  if (child === undefined) return `the parent limits it to ${formatMoney(parent)} and the child sets no limit`;
  if (child.currency !== parent.currency) return `the child is in ${child.currency}, the parent in ${parent.currency}`;
  if (child.minor > parent.minor) return `the child allows ${formatMoney(child)}, more than the parent's ${formatMoney(parent)}`;
  return null;
}

/** Null when `child` is no wider than `parent`; otherwise the first widened dimension. */
export function checkAttenuation(parent: PermitClaims, child: PermitClaims, link: number): PermitFailure | null {
  const p = parent.gavel;
  const c = child.gavel;
  if (!p.actions.includes('*')) {
    const extra = c.actions.find((a) => !p.actions.includes(a));
    if (extra !== undefined) return widened('actions', `action ${JSON.stringify(extra)} is not granted by the parent`, link);
  }
  const uncovered = c.resources.find((r) => !p.resources.some((pr) => patternCovers(pr, r)));
  if (uncovered !== undefined) return widened('resources', `resource pattern ${JSON.stringify(uncovered)} is not covered by the parent`, link);
  const currencies = limitedCurrencies(p);
  const perRequest = moneyWithin(p.max_per_request, c.max_per_request, currencies);
  if (perRequest !== null) return widened('max_per_request', `max_per_request widened: ${perRequest}`, link);
  const budget = moneyWithin(p.budget, c.budget, currencies);
  if (budget !== null) return widened('budget', `budget widened: ${budget}`, link);
  if (p.max_uses !== undefined && (c.max_uses === undefined || c.max_uses > p.max_uses)) {
    return widened('max_uses', `max_uses widened: the parent allows ${p.max_uses}, the child ${c.max_uses ?? 'unlimited'}`, link);
  }
  if (child.nbf < parent.nbf) return widened('nbf', 'the child becomes valid before its parent', link);
  if (child.exp > parent.exp) return widened('exp', 'the child expires after its parent', link);
  return null;
}
