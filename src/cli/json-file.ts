// A JSON file an auditor hands the offline checkers: read with member names exactly as written
// (lib/json-parse.ts), and with the pointers of any name given twice, which a checker refuses:
// readers differ on which of the two counts, so what a person reads need not be what was checked.
import { readFileSync, statSync } from 'node:fs';
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

/** Far above any proof or consistency file (a path has at most 63 hashes; an event is a few KiB, a policy document 8 MiB). */
export const MAX_FILE_BYTES = 32 * 1024 * 1024;

/**
 * A number's value as written: sign, significant digits and power of ten, so that 1, 1.0 and 1e0
 * agree and 0.99999999999999999999 does not agree with 1. Linear, without regular expressions.
 */
function decimalKey(source: string): string {
  let i = 0;
  const negative = source[0] === '-';
  if (negative) i++;
  let digits = '';
  let exponent = 0;
  for (; i < source.length && source[i]! >= '0' && source[i]! <= '9'; i++) digits += source[i];
  if (source[i] === '.') for (i++; i < source.length && source[i]! >= '0' && source[i]! <= '9'; i++) { digits += source[i]; exponent--; }
  if (source[i] === 'e' || source[i] === 'E') exponent += Number(source.slice(i + 1));
  let start = 0;
  while (start < digits.length && digits[start] === '0') start++;
  let end = digits.length;
  while (end > start && digits[end - 1] === '0') { end--; exponent++; }
  return start === end ? '0' : `${negative ? '-' : ''}${digits.slice(start, end)}e${exponent}`;
}

/** Numbers whose text names another value than the one every reader computes from it (first few). */
function inexactNumbers(text: string): string[] {
  const found: string[] = [];
  JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
    if (typeof value === 'number' && context?.source !== undefined && found.length < 3
      && decimalKey(context.source) !== decimalKey(JSON.stringify(value))) found.push(`${context.source} reads as ${JSON.stringify(value)}`);
    return value;
  });
  return found;
}

/** The usual reasons a file named on the command line cannot be read, in words. */
const READ_FAILURES: Record<string, string> = {
  ENOENT: 'no such file', EISDIR: 'it is a directory', EACCES: 'permission denied', EPERM: 'permission denied', ENOTDIR: 'a part of its path is not a directory', ELOOP: 'too many symbolic links',
};

export function readJsonFile(file: string, what: string): { value: unknown; repeated: string[] } {
  let bytes: Buffer;
  try {
    if (statSync(file).size > MAX_FILE_BYTES) throw new DamagedFile(`the ${what} ${file} is larger than ${MAX_FILE_BYTES} bytes: not a file this command writes`);
    bytes = readFileSync(file);
  } catch (e) {
    if (e instanceof DamagedFile) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(`cannot read the ${what} ${file}: ${code ? `${READ_FAILURES[code] ?? 'error'} (${code})` : (e as Error).message}`);
  }
  // JSON is UTF-8 without a byte order mark (RFC 8259 §8.1): a lenient decoder would turn a damaged
  // byte into U+FFFD, and what another reader shows need not be what was checked.
  let text: string;
  try { text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes); } catch { throw new DamagedFile(`the ${what} ${file} is not UTF-8 text`); }
  if (text.charCodeAt(0) === 0xfeff) throw new DamagedFile(`the ${what} ${file} starts with a byte order mark; JSON has none`);
  let value: unknown;
  try { value = parseJsonExactly(text); } catch (e) { throw new DamagedFile(`the ${what} ${file} is not JSON: ${(e as Error).message}`); }
  // A number written with more precision than a double holds (0.99999999999999999999 reads as 1): a
  // person reads one value where the check used another, as with a name given twice.
  const inexact = inexactNumbers(text);
  if (inexact.length > 0) throw new DamagedFile(`the ${what} ${file} writes numbers that read as other values (${inexact.join('; ')})`);
  return { value, repeated: repeatedMembers(text).map((r) => r.pointer) };
}

/**
 * The object a checker's file holds. An array or a scalar is a damaged file (exit 1). The server's
 * error answer saved in the file's place (a proof asked for too early, a size past the newest
 * checkpoint: problem+json) says nothing of the log, so it is no failed check either: said as what
 * it is, with its code and detail, as a file the checker cannot use (exit 2).
 */
export function fileObject(value: unknown, file: string, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new DamagedFile(`the ${what} must hold a JSON object`);
  const o = value as Record<string, unknown>;
  if (typeof o.type === 'string' && typeof o.status === 'number' && typeof o.code === 'string' && typeof o.detail === 'string') {
    throw new Error(`the ${what} ${file} holds the server's error answer (${o.status} ${o.code}: ${o.detail}), not a file to check; ask again for it as the answer says`);
  }
  return o;
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
