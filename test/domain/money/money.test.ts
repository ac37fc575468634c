import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addMoney, compareMoney, isCurrencyCode, MAX_MINOR, validateMoney } from '../../../src/domain/money/index.ts';

const codes = (value: unknown) => {
  const result = validateMoney(value);
  return result.ok ? [] : result.errors.map((e) => `${e.pointer} ${e.code}`);
};

test('accepts integer minor units with an ISO-4217 shaped currency', () => {
  assert.deepEqual(validateMoney({ minor: 1250, currency: 'EUR' }), { ok: true, money: { minor: 1250, currency: 'EUR' } });
  assert.deepEqual(validateMoney({ minor: 0, currency: 'JPY' }), { ok: true, money: { minor: 0, currency: 'JPY' } });
  assert.deepEqual(validateMoney({ minor: MAX_MINOR, currency: 'USD' }), { ok: true, money: { minor: 2 ** 53 - 1, currency: 'USD' } });
});

test('refuses floats, strings, negatives and values beyond 2^53-1, each with its own code', () => {
  assert.deepEqual(codes({ minor: 12.5, currency: 'EUR' }), ['/minor money_minor_not_integer']);
  assert.deepEqual(codes({ minor: '1250', currency: 'EUR' }), ['/minor money_minor_not_number']);
  assert.deepEqual(codes({ minor: -1, currency: 'EUR' }), ['/minor money_minor_negative']);
  assert.deepEqual(codes({ minor: 2 ** 53, currency: 'EUR' }), ['/minor money_minor_too_large']);
  assert.deepEqual(codes({ minor: Number.NaN, currency: 'EUR' }), ['/minor money_minor_not_integer']);
  assert.deepEqual(codes({ minor: Infinity, currency: 'EUR' }), ['/minor money_minor_not_integer']);
});

test('refuses malformed currencies and reports every error at once', () => {
  assert.deepEqual(codes({ minor: 1, currency: 'eur' }), ['/currency money_currency_invalid']);
  assert.deepEqual(codes({ minor: 1, currency: 'EURO' }), ['/currency money_currency_invalid']);
  assert.deepEqual(codes({ minor: 1.5, currency: 7, note: 'x' }), ['/note money_unknown_field', '/minor money_minor_not_integer', '/currency money_currency_invalid']);
  assert.deepEqual(codes({}), ['/minor money_minor_missing', '/currency money_currency_missing']);
  assert.deepEqual(codes(null), [' money_not_object']);
  assert.deepEqual(codes([1, 'EUR']), [' money_not_object']);
  assert.equal(isCurrencyCode('CHF'), true);
  assert.equal(isCurrencyCode('ch f'), false);
});

test('normalizes -0 to 0', () => {
  const result = validateMoney({ minor: -0, currency: 'EUR' });
  assert.ok(result.ok);
  assert.ok(Object.is(result.money.minor, 0));
});

test('compares and adds only within one currency', () => {
  assert.equal(compareMoney({ minor: 1, currency: 'EUR' }, { minor: 2, currency: 'EUR' }), -1);
  assert.equal(compareMoney({ minor: 2, currency: 'EUR' }, { minor: 2, currency: 'EUR' }), 0);
  assert.equal(compareMoney({ minor: 3, currency: 'EUR' }, { minor: 2, currency: 'EUR' }), 1);
  assert.equal(compareMoney({ minor: 1, currency: 'EUR' }, { minor: 1, currency: 'USD' }), 'indeterminate');
  assert.deepEqual(addMoney({ minor: 1, currency: 'EUR' }, { minor: 2, currency: 'EUR' }), { minor: 3, currency: 'EUR' });
  assert.equal(addMoney({ minor: 1, currency: 'EUR' }, { minor: 2, currency: 'USD' }), 'indeterminate');
  assert.equal(addMoney({ minor: MAX_MINOR, currency: 'EUR' }, { minor: 1, currency: 'EUR' }), null);
});
