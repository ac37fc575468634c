// Request validation. Bodies are JSON and must carry the right types (no coercion: "100" is not
// 100, which matters for money). Query strings and path parameters are text by nature, so their
// declared integers and booleans are converted before checking. Every error is reported at once.
import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { createRequire } from 'node:module';
import { escapePointer } from './problem.ts';
import { isRequestResource } from '../domain/policy/formats.ts';
import { isInstant } from '../lib/instant.ts';

// minLength and maxLength count code points, as JSON Schema says: Ajv walks every character of a
// string to count them, and a permit is about 800 characters (1.9 µs of the 2.2 µs POST /v1/authorize
// spent validating, measured). A string with no surrogate has one code point per code unit, so only
// strings holding one are walked. Ajv's compiled validators call whatever this export holds when
// they are compiled, so it is replaced before any schema is (test/http/validation.test.ts).
type CodePoints = ((s: string) => number) & { code: string };
const runtime = createRequire(import.meta.url)('ajv/dist/runtime/ucs2length') as { default: CodePoints };
const walk = runtime.default;
const SURROGATE = /[\ud800-\udfff]/;
if (!('walk' in walk)) runtime.default = Object.assign((s: string) => (SURROGATE.test(s) ? walk(s) : s.length), { code: walk.code, walk });

// verbose: an error carries its schema, so a pattern's error can say what the field's description
// says rather than quote the regular expression (http/errors.ts); it costs nothing on valid input.
const common: Options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false, verbose: true };

/** Formats of Gavel's own, from the domain, so a request schema refuses what the domain would. */
export const REQUEST_RESOURCE_FORMAT = 'gavel-request-resource';

function make(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ ...common, coerceTypes });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  ajv.addFormat(REQUEST_RESOURCE_FORMAT, { type: 'string', validate: isRequestResource });
  // Every instant a caller sends is read one way (lib/time.ts parseInstant), not as ajv-formats'
  // date-time, which also takes a leap second, "+01" and a space, none of which Date.parse reads.
  ajv.addFormat('date-time', { type: 'string', validate: isInstant });
  return ajv;
}

const strictBodies = make(false);
const textParts = make(true);


/**
 * Text every store can keep: well-formed Unicode without NUL (PostgreSQL's text and jsonb refuse
 * U+0000, so a body holding one would fail there alone, as a 500, after passing here).
 */
const storable = (s: string) => s.isWellFormed() && !s.includes('\0');

/** True when every string (member name or value) in `value` is storable text. No allocation. */
function allWellFormed(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return storable(value);
  if (value === null || typeof value !== 'object') return true;
  // Deep bodies take the iterative walk below, so this recursion is bounded.
  if (depth > 32) return illFormedPointers(value, 1).length === 0;
  if (Array.isArray(value)) {
    for (const v of value) if (!allWellFormed(v, depth + 1)) return false;
    return true;
  }
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    if (!storable(k) || !allWellFormed((value as Record<string, unknown>)[k], depth + 1)) return false;
  }
  return true;
}

/**
 * The pointer of the first string (member name or value) that is not well-formed Unicode (a lone
 * surrogate, which JSON's `\ud800` escape can carry) or holds a NUL, or null. Such a string cannot
 * be canonicalized (RFC 8785) for the audit log or hashed reliably, or stored on PostgreSQL, so it is
 * refused as input.
 * Every body passes through here, so the common case (all well-formed) is checked first without
 * building pointers; the walk that names the culprit runs only when there is one.
 */
export function illFormedString(value: unknown): string | null {
  return allWellFormed(value, 0) ? null : illFormedPointers(value, 1)[0] ?? null;
}

/** Every such string's pointer, in the order the body writes them (decision 0001: every error at once). */
function illFormedStrings(value: unknown): string[] {
  return allWellFormed(value, 0) ? [] : illFormedPointers(value, Infinity);
}

/** Iterative, so a deeply nested body cannot exhaust the stack. Stops after `most`. */
function illFormedPointers(value: unknown, most: number): string[] {
  const found: string[] = [];
  // A member name is checked where it is written: before its value, after the members before it.
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length > 0 && found.length < most) {
    const [v, pointer] = stack.pop()!;
    if (typeof v === 'string') {
      if (!storable(v)) found.push(pointer);
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${pointer}/${i}`]);
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, inner] = entries[i]!;
        const at = `${pointer}/${escapePointer(k)}`;
        stack.push([inner, at], [k, at]);
      }
    }
  }
  return found;
}

type Validate = ((data: unknown) => boolean) & { errors?: unknown[] | null };

/** `validate`, after a check for text no store can keep: `culprits` names their pointers. */
function storableText(validate: Validate, culprits: (data: unknown) => string[], message: string): Validate {
  const wrapped: Validate = (data: unknown) => {
    const pointers = culprits(data);
    if (pointers.length > 0) {
      wrapped.errors = pointers.map((instancePath) => ({ keyword: 'wellFormed', instancePath, params: {}, message }));
      return false;
    }
    const ok = validate(data);
    wrapped.errors = validate.errors ?? null;
    return ok;
  };
  return wrapped;
}

/** A query string or path decodes %00 to NUL, which PostgreSQL cannot compare or store: refused as in bodies. */
function nulParameters(data: unknown): string[] {
  if (data === null || typeof data !== 'object') return [];
  const hasNul = (x: unknown) => typeof x === 'string' && x.includes('\0');
  return Object.entries(data).filter(([, v]) => hasNul(v) || (Array.isArray(v) && v.some(hasNul))).map(([k]) => `/${escapePointer(k)}`);
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body'
    ? storableText(strictBodies.compile(schema as object) as Validate, illFormedStrings, 'is not text every store can keep (a lone surrogate or a NUL character)')
    : storableText(textParts.compile(schema as object) as Validate, nulParameters, 'holds a NUL character')) as never;
