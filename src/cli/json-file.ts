// A JSON file an auditor hands the offline checkers: read with member names exactly as written
// (lib/json-parse.ts), and with the pointers of any name given twice, which a checker refuses:
// readers differ on which of the two counts, so what a person reads need not be what was checked.
import { readFileSync } from 'node:fs';
import { parseJsonExactly, repeatedMembers } from '../lib/json-parse.ts';

/** Why a file that names members more than once checks nothing, or undefined when it names none twice. */
export function repeatedReason(what: string, repeated: readonly string[]): string | undefined {
  return repeated.length > 0 ? `the ${what} names a member more than once (${repeated.join(', ')}); readers differ on which one counts` : undefined;
}

export function readJsonFile(file: string, what: string): { value: unknown; repeated: string[] } {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (e) { throw new Error(`cannot read the ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`); }
  let value: unknown;
  try { value = parseJsonExactly(text); } catch (e) { throw new Error(`the ${what} ${file} is not JSON: ${(e as Error).message}`); }
  return { value, repeated: repeatedMembers(text).map((r) => r.pointer) };
}
