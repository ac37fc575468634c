// Money is an integer count of minor units in one currency (DESIGN.md "Money").
// Nothing here parses or prints a decimal: amounts cross every boundary as integers.

export interface Money {
  /** Amount in minor units (cents for EUR): a non-negative safe integer. */
  readonly minor: number;
  /** ISO-4217 shaped code: three uppercase ASCII letters. */
  readonly currency: string;
}

/** 2^53 - 1: the largest integer a JSON number carries exactly. */
export const MAX_MINOR = Number.MAX_SAFE_INTEGER;

export interface MoneyError {
  /** RFC 6901 pointer relative to the value validated ('' is the value itself). */
  readonly pointer: string;
  readonly code: MoneyErrorCode;
  readonly message: string;
}

export type MoneyErrorCode =
  | 'money_not_object'
  | 'money_minor_missing'
  | 'money_minor_not_number'
  | 'money_minor_not_integer'
  | 'money_minor_negative'
  | 'money_minor_too_large'
  | 'money_currency_missing'
  | 'money_currency_invalid'
  | 'money_unknown_field';

export type MinorErrorCode = 'money_minor_not_number' | 'money_minor_not_integer' | 'money_minor_negative' | 'money_minor_too_large';

const CURRENCY = /^[A-Z]{3}$/;

/** True when `value` has the ISO-4217 shape (three uppercase letters); the code list itself is not checked. */
export function isCurrencyCode(value: unknown): value is string {
  return typeof value === 'string' && CURRENCY.test(value);
}

/**
 * Checks one minor-unit amount. Returns null when valid, else the error code.
 * Strings are refused even when they hold digits: a string amount means someone parsed or
 * printed a number on the way, which is where rounding bugs live.
 */
export function checkMinor(value: unknown): MinorErrorCode | null {
  if (typeof value !== 'number') return 'money_minor_not_number';
  if (!Number.isFinite(value) || !Number.isInteger(value)) return 'money_minor_not_integer';
  if (value < 0) return 'money_minor_negative';
  if (value > MAX_MINOR) return 'money_minor_too_large';
  return null;
}

const MINOR_MESSAGES: Record<MinorErrorCode, string> = {
  money_minor_not_number: 'minor must be a JSON integer (not a string or other type)',
  money_minor_not_integer: 'minor must be an integer count of minor units; fractions are refused',
  money_minor_negative: 'minor must not be negative',
  money_minor_too_large: `minor must not exceed ${MAX_MINOR} (2^53-1)`,
};

/** Message for a code returned by checkMinor. */
export function minorMessage(code: MinorErrorCode): string {
  return MINOR_MESSAGES[code];
}

export type MoneyValidation = { ok: true; money: Money } | { ok: false; errors: MoneyError[] };

/** Validates an untrusted value as Money, returning every error at once. Never throws. */
export function validateMoney(value: unknown): MoneyValidation {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, errors: [{ pointer: '', code: 'money_not_object', message: 'money must be an object {minor, currency}' }] };
  }
  const errors: MoneyError[] = [];
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key !== 'minor' && key !== 'currency') {
      errors.push({ pointer: '/' + key.replaceAll('~', '~0').replaceAll('/', '~1'), code: 'money_unknown_field', message: `unknown field "${key.slice(0, 64)}"` });
    }
  }
  const minor = Object.hasOwn(record, 'minor') ? record.minor : undefined;
  const currency = Object.hasOwn(record, 'currency') ? record.currency : undefined;
  if (minor === undefined) {
    errors.push({ pointer: '/minor', code: 'money_minor_missing', message: 'minor is required' });
  } else {
    const code = checkMinor(minor);
    if (code !== null) errors.push({ pointer: '/minor', code, message: minorMessage(code) });
  }
  if (currency === undefined) {
    errors.push({ pointer: '/currency', code: 'money_currency_missing', message: 'currency is required' });
  } else if (!isCurrencyCode(currency)) {
    errors.push({ pointer: '/currency', code: 'money_currency_invalid', message: 'currency must be three uppercase letters (ISO 4217)' });
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, money: { minor: (minor as number) + 0 /* -0 becomes 0 */, currency: currency as string } };
}
