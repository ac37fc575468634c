export { type Money, type MoneyError, type MoneyErrorCode, type MinorErrorCode, type MoneyValidation, MAX_MINOR, isCurrencyCode, checkMinor, minorMessage, validateMoney } from './money.ts';
export { compareMoney, addMoney, INDETERMINATE } from './compare.ts';
