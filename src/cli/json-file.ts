// A JSON file an auditor hands the offline checkers: read with member names exactly as written
// (lib/json-parse.ts), and with the pointers of any name given twice, which a checker refuses:
// readers differ on which of the two counts, so what a person reads need not be what was checked.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseJsonExactly, repeatedMembers } from '../lib/json-parse.ts';
import { parseVkey, type VerifierKey } from '../domain/auditlog/note.ts';

/** Why a file that names members more than once checks nothing, or undefined when it names none twice. */
export function repeatedReason(what: string, repeated: readonly string[]): string | undefined {
  return repeated.length > 0 ? `the ${what} names a member more than once (${repeated.join(', ')}); readers differ on which one counts` : undefined;
}

/**
 * What a file holds, as against how the command was called: a file that is not JSON, or lacks a
 * member, checks nothing, so a checker answers it as a failed check (exit 1), not a usage error (2).
 */
export class DamagedFile extends Error {}

export function readJsonFile(file: string, what: string): { value: unknown; repeated: string[] } {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (e) { throw new Error(`cannot read the ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`); }
  let value: unknown;
  try { value = parseJsonExactly(text); } catch (e) { throw new DamagedFile(`the ${what} ${file} is not JSON: ${(e as Error).message}`); }
  return { value, repeated: repeatedMembers(text).map((r) => r.pointer) };
}

/** The offline checkers' command line: one file, the log's key and any witness keys; `flags` are booleans of the command's own. */
export function checkerArgs(argv: readonly string[], what: string, flags: readonly string[] = []): { file: string; logKey: VerifierKey; witnessKeys: VerifierKey[]; flags: Record<string, boolean> } {
  const { values, positionals } = parseArgs({
    args: [...argv], allowPositionals: true, strict: true,
    options: {
      'log-key': { type: 'string' }, 'witness-key': { type: 'string', multiple: true, default: [] },
      ...Object.fromEntries(flags.map((f) => [f, { type: 'boolean', default: false } as const])),
    },
  });
  if (positionals.length > 1) throw new Error(`one ${what} at a time (got ${positionals.length})`);
  const logKey = values['log-key'];
  if (positionals.length !== 1 || typeof logKey !== 'string') throw new Error(`a ${what} and --log-key are required`);
  const given = values as Record<string, unknown>;
  return {
    file: positionals[0]!, logKey: parseVkey(logKey), witnessKeys: values['witness-key'].map(parseVkey),
    flags: Object.fromEntries(flags.map((f) => [f, given[f] === true])),
  };
}
