// The duplicate-member check counts member names in the text without parsing it: this checks that
// count against the JSON it renders, for texts with escapes, quotes, colons and backslashes in names
// and values, arbitrary whitespace and nesting, names repeated or not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseJson } from '../../src/http/body.ts';
import { Problem, escapePointer } from '../../src/http/problem.ts';

type Json = null | number | string | Json[] | { members: [string, Json][] };

const name = fc.string({ unit: fc.constantFrom('a', 'b', '"', '\\', ':', '/', '~', ' ', 'é', '\n'), maxLength: 3 });
const json: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof({ maxDepth: 4 },
    fc.constant(null), fc.integer(), name,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.array(fc.tuple(name, tie('value')), { maxLength: 5 }).map((members) => ({ members }))),
})).value;

const space = fc.constantFrom('', ' ', '\n\t', '\r\n  ');
/** A string literal, some characters written as \u escapes. */
const literal = (s: string, escapeAt: number) => {
  const plain = JSON.stringify(s);
  if (s.length === 0 || escapeAt % 3 !== 0) return plain;
  const i = escapeAt % s.length;
  return JSON.stringify(s.slice(0, i)).slice(0, -1) + `\\u${s.charCodeAt(i).toString(16).padStart(4, '0')}` + JSON.stringify(s.slice(i + 1)).slice(1);
};

function render(value: Json, ws: () => string, n: () => number): string {
  if (value === null || typeof value === 'number') return JSON.stringify(value);
  if (typeof value === 'string') return literal(value, n());
  if (Array.isArray(value)) return `[${ws()}${value.map((v) => render(v, ws, n)).join(`${ws()},${ws()}`)}${ws()}]`;
  return `{${ws()}${value.members.map(([k, v]) => `${literal(k, n())}${ws()}:${ws()}${render(v, ws, n)}`).join(`${ws()},${ws()}`)}${ws()}}`;
}

/** The value the text denotes, built from the document itself: JSON.parse is no oracle here (lib/json-parse.ts). */
function denoted(value: Json): unknown {
  if (Array.isArray(value)) return value.map(denoted);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of value.members) Object.defineProperty(out, k, { value: denoted(v), writable: true, enumerable: true, configurable: true });
  return out;
}

/** The pointers of the repeated members, in text order. */
function repeats(value: Json, at = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => repeats(v, `${at}/${i}`));
  if (value === null || typeof value !== 'object') return [];
  const seen = new Set<string>();
  return value.members.flatMap(([k, v]) => {
    const here = seen.has(k) ? [`${at}/${escapePointer(k)}`] : [];
    seen.add(k);
    return [...here, ...repeats(v, `${at}/${escapePointer(k)}`)];
  });
}

test('a body is refused as duplicate_member exactly when an object names a member twice, at each repeat', () => {
  let refused = 0;
  let accepted = 0;
  fc.assert(fc.property(json, fc.array(space, { minLength: 1 }), fc.array(fc.nat(), { minLength: 1 }), (value, spaces, picks) => {
    let s = 0;
    let p = 0;
    const text = render(value, () => spaces[s++ % spaces.length]!, () => picks[p++ % picks.length]!);
    const expected = repeats(value);
    let errors: { pointer: string; code: string }[] = [];
    try {
      assert.deepEqual(parseJson(Buffer.from(text)), denoted(value), text);
      accepted++;
    } catch (e) {
      assert.ok(e instanceof Problem && e.code === 'invalid_request', `${text}: ${String(e)}`);
      errors = (e.errors ?? []).map(({ pointer, code }) => ({ pointer, code }));
      // A refusal names what it refuses: one without errors would pass for "no repeats" below.
      assert.ok(errors.length > 0, `${text}: refused without an error`);
      refused++;
    }
    assert.deepEqual(errors, expected.map((pointer) => ({ pointer, code: 'duplicate_member' })), text);
  }), { numRuns: 3000 });
  assert.ok(refused > 100 && accepted > 100, `both outcomes were generated (${refused} refused, ${accepted} accepted)`);
});

test('a body\'s escaped member names are read as written, even after V8 has parsed a backslash name', () => {
  JSON.parse('{"h":[],"\\\\":0}'); // lib/json-parse.ts: after this, V8 reads {"h":1,"\"":2} with the key "\"
  assert.deepEqual(Object.keys(parseJson(Buffer.from('{"h":1,"\\"":2}')) as object), ['h', '"']);
  assert.deepEqual(parseJson(Buffer.from('{"h":{"\\r":1,"\\n":[{"\\f":"\\\\"}]}}')), { h: { '\r': 1, '\n': [{ '\f': '\\' }] } });
});

test('a body refused for a prototype member leaves nothing behind for the next body to be judged by', () => {
  // Refused midway through the walk, with another object still waiting to be walked.
  assert.throws(() => parseJson(Buffer.from('{"a":{"b":1,"c":2},"d":{"__proto__":1}}')), (e: unknown) => e instanceof Problem && e.errors?.[0]?.code === 'forbidden_member');
  assert.deepEqual(parseJson(Buffer.from('{"x":{"y":1}}')), { x: { y: 1 } });
});

test('a repeated name is quoted in its error cut to 64 characters, so the answer stays small', () => {
  const long = 'n'.repeat(10_000);
  assert.throws(() => parseJson(Buffer.from(`{"${long}":1,"${long}":2}`)), (e: unknown) => {
    assert.ok(e instanceof Problem && e.errors?.length === 1);
    assert.equal(e.errors[0]!.code, 'duplicate_member');
    assert.ok(e.errors[0]!.message.length < 200, e.errors[0]!.message.slice(0, 300));
    return true;
  });
});
