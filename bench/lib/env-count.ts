// Counts a benchmark takes from its environment, read with the settings' own parser
// (src/config/config.ts): a typo stops the run with the variable's name, never becomes NaN.
import { integer } from '../../src/config/config.ts';

type Range = { min?: number; max?: number };

const parse = (name: string, raw: string, range: Range): number => {
  try { return integer(range.min ?? 1, range.max ?? 1000)(raw); } catch (error) { throw new Error(`${name} ${(error as Error).message}`); }
};

/** The whole number in `name` (from `min` to `max`), or `fallback` when it is unset or empty. */
export function countFromEnv(name: string, fallback: number, range: Range = {}): number {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? fallback : parse(name, raw, range);
}

/**
 * The seconds in `name`, a positive decimal (`1.5`) from `min` to `max`, or `fallback` when it is
 * unset or empty: for durations a benchmark may want shorter than a second.
 */
export function secondsFromEnv(name: string, fallback: number, range: Range = {}): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const min = range.min ?? 0.1;
  const max = range.max ?? 3600;
  const n = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || n < min || n > max) throw new Error(`${name} must be a number of seconds between ${min} and ${max}, got "${raw}"`);
  return n;
}

/** A comma-separated list of such numbers in `name`, or `fallback` when it is unset or empty. */
export function countsFromEnv(name: string, fallback: number[], range: Range = {}): number[] {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? fallback : raw.split(',').map((item) => parse(name, item.trim(), range));
}
