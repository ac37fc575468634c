// An operation whose configuration names where its payload carries the amount (merchants/config.ts,
// decision 0406) is called only with the amount the decision checks and spends: otherwise an ALLOW
// for 1 EUR could ask the merchant to charge a million, and budgets would not bound what is charged.
import type { Money } from '../../domain/money/money.ts';
import type { Operation } from '../../merchants/config.ts';
import { invalidRequest, type FieldError } from '../../http/problem.ts';
import { valueAt } from '../../lib/json-pointer.ts';

/** A number or a currency code as written; anything else by its kind only, so an answer never echoes what a payload holds. */
const shown = (v: unknown): string => {
  if (typeof v === 'number' || (typeof v === 'string' && /^[A-Z]{3}$/.test(v))) return JSON.stringify(v);
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
};

/** 400 `invalid_request`, every difference at its pointer, unless the payload asks for `amount`. Before any decision. */
export function refuseUnboundAmount(merchant: string, name: string, op: Operation, amount: Money | undefined, payload: object): void {
  const at = op.amount;
  if (!at) return;
  const errors: FieldError[] = [];
  const inPayload = (pointer: string, want: string, expected: unknown) => {
    const value = valueAt(payload, pointer);
    if (value === undefined) errors.push({ pointer: `/execution/payload${pointer}`, code: 'required', message: `is required: operation "${name}" of merchant "${merchant}" reads ${want} here` });
    else if (amount && value !== expected) errors.push({ pointer: `/execution/payload${pointer}`, code: 'amount_mismatch', message: `is ${shown(value)}, but ${want} is ${shown(expected)}: the merchant must be asked for the amount authorized` });
  };
  if (!amount) errors.push({ pointer: '/amount', code: 'required', message: `is required: operation "${name}" of merchant "${merchant}" charges the amount its payload carries at ${at.minor}` });
  inPayload(at.minor, 'amount.minor', amount?.minor);
  if (at.currency.startsWith('/')) inPayload(at.currency, 'amount.currency', amount?.currency);
  else if (amount && amount.currency !== at.currency) {
    errors.push({ pointer: '/amount/currency', code: 'amount_mismatch', message: `is ${shown(amount.currency)}, but operation "${name}" of merchant "${merchant}" charges in ${at.currency}` });
  }
  if (errors.length > 0) throw invalidRequest(errors, 'the execution does not ask the merchant for the amount authorized; see errors');
}
