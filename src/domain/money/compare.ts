// Amounts compare only within one currency; across currencies the answer is unknown,
// never "less" or "greater" (no exchange rate lives in the domain).
import type { Money } from './money.ts';

export const INDETERMINATE = 'indeterminate' as const;

/** -1, 0 or 1 when both amounts share a currency; 'indeterminate' otherwise. */
export function compareMoney(a: Money, b: Money): -1 | 0 | 1 | typeof INDETERMINATE {
  if (a.currency !== b.currency) return INDETERMINATE;
  return a.minor < b.minor ? -1 : a.minor > b.minor ? 1 : 0;
}

/** Sum of two amounts of one currency; 'indeterminate' across currencies, null past 2^53-1. */
export function addMoney(a: Money, b: Money): Money | typeof INDETERMINATE | null {
  if (a.currency !== b.currency) return INDETERMINATE;
  const minor = a.minor + b.minor;
  return Number.isSafeInteger(minor) ? { minor, currency: a.currency } : null;
}
