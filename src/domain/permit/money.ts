// Money as a permit carries it. Integers in minor units only; nothing parses a decimal.
import type { Money } from './types.ts';

const CURRENCY = /^[A-Z]{3}$/;

export function isMoney(value: unknown): value is Money {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  if (keys.length !== 2 || !Object.hasOwn(value, 'minor') || !Object.hasOwn(value, 'currency')) return false;
  const { minor, currency } = value as Record<string, unknown>;
  return Number.isSafeInteger(minor) && (minor as number) >= 0 && typeof currency === 'string' && CURRENCY.test(currency);
}

export function formatMoney(m: Money): string {
  return `${m.minor} ${m.currency} (minor units)`;
}
