// Tree sizes and indexes are JS numbers (safe integers, up to 2^53-1). Bitwise operators
// would truncate to 32 bits, so halving and parity use arithmetic.
import { AuditLogError } from './errors.ts';

export function isTreeSize(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

export function checkTreeSize(n: unknown, what: string): number {
  if (!isTreeSize(n)) throw new AuditLogError('invalid_size', `${what} must be a non-negative safe integer`);
  return n;
}

export const half = (x: number): number => Math.floor(x / 2);
export const isOdd = (x: number): boolean => x % 2 === 1;

/** Largest power of two strictly smaller than n (n >= 2): RFC 9162's split point k. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}
