// Counts a benchmark takes from its environment, read with the settings' own parser
// (src/config/config.ts): a typo stops the run with the variable's name, never becomes NaN.
import { integer } from '../../src/config/config.ts';

/** The whole number in `name` (from `min` to `max`), or `fallback` when it is unset or empty. */
export function countFromEnv(name: string, fallback: number, range: { min?: number; max?: number } = {}): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  try { return integer(range.min ?? 1, range.max ?? 1000)(raw); } catch (error) { throw new Error(`${name} ${(error as Error).message}`); }
}
