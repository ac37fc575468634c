// Well-formed Unicode check on every body: the fast path must agree with the walk that names the
// culprit, at any depth and position, for member names and values alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { illFormedString } from '../../src/http/validation.ts';

test('illFormedString: null for well-formed bodies, the JSON pointer of the first lone surrogate otherwise', () => {
  assert.equal(illFormedString({ a: ['x', { b: '😀' }], c: null, d: 1 }), null);
  assert.equal(illFormedString('\ud800'), '');
  assert.equal(illFormedString({ a: ['x', { 'b/~': 'ok\udfff' }] }), '/a/1/b~1~0');
  assert.equal(illFormedString({ a: 1, ['\ud800k']: 2 }), '/\ud800k');
  assert.equal(illFormedString([1, 2, ['\ud800']]), '/2/0');
});

test('illFormedString: deep nesting neither overflows the stack nor hides a culprit', () => {
  let deep: unknown = 'ok';
  for (let i = 0; i < 50_000; i++) deep = [deep];
  assert.equal(illFormedString(deep), null);
  let bad: unknown = '\ud800';
  for (let i = 0; i < 50_000; i++) bad = { k: bad };
  assert.equal(illFormedString(bad), '/k'.repeat(50_000));
});

test('string lengths count code points: an astral character is one, whether or not a surrogate is present elsewhere', async () => {
  const { createRequire } = await import('node:module');
  const { validatorCompiler } = await import('../../src/http/validation.ts');
  const runtime = createRequire(import.meta.url)('ajv/dist/runtime/ucs2length') as { default: ((s: string) => number) & { walk?: unknown } };
  assert.ok(runtime.default.walk, 'the validators compile against the counting that walks only strings with a surrogate');
  const validate = (schema: object, part: 'body' | 'querystring') => validatorCompiler({ schema, httpPart: part, method: 'POST', url: '/x' } as never) as unknown as (d: unknown) => boolean;
  const body = validate({ type: 'object', properties: { s: { type: 'string', minLength: 2, maxLength: 4 } } }, 'body');
  for (const [s, ok] of [['abcd', true], ['abcde', false], ['a', false], ['🙂🙂🙂🙂', true], ['🙂🙂🙂🙂🙂', false], ['🙂', false], ['é漢字🙂', true], ['ab🙂cd', false]] as const) {
    assert.equal(body({ s }), ok, `${JSON.stringify(s)} in a body`);
  }
  // Query strings are not checked for lone surrogates first: one counts as one code point.
  const query = validate({ type: 'object', properties: { s: { type: 'string', maxLength: 2 } } }, 'querystring');
  assert.equal(query({ s: '\ud800\ud800' }), true);
  assert.equal(query({ s: '\ud800\ud800\ud800' }), false);
  assert.equal(query({ s: '\ud83d\ude42\ud800' }), true, 'a pair, then a lone high surrogate');
});

test('a NUL is refused in bodies, query strings and paths alike: PostgreSQL cannot store or compare it', async () => {
  const { validatorCompiler } = await import('../../src/http/validation.ts');
  const validate = (schema: object, part: 'body' | 'querystring' | 'params') => validatorCompiler({ schema, httpPart: part, method: 'POST', url: '/x' } as never) as unknown as ((d: unknown) => boolean) & { errors?: { keyword: string; instancePath: string }[] };
  assert.equal(illFormedString({ a: ['x', { b: 'no\u0000' }] }), '/a/1/b');
  assert.equal(illFormedString({ ['k\u0000']: 1 }), '/k\u0000');
  const schema = { type: 'object', properties: { s: { type: 'string' } } };
  for (const part of ['body', 'querystring', 'params'] as const) {
    const v = validate(schema, part);
    assert.equal(v({ s: 'fine' }), true, part);
    assert.equal(v({ s: 'a\u0000b' }), false, part);
    assert.deepEqual(v.errors!.map((e) => [e.keyword, e.instancePath]), [['wellFormed', '/s']], part);
  }
  // Every such parameter of a query or path is named at once (decision 0001), in the order written.
  for (const part of ['querystring', 'params'] as const) {
    const v = validate({ type: 'object', properties: { s: { type: 'string' }, t: { type: 'array' }, u: { type: 'string' } } }, part);
    assert.equal(v({ s: 'a\u0000', u: 'fine', t: ['ok', '\u0000'] }), false, part);
    assert.deepEqual(v.errors!.map((e) => e.instancePath), ['/s', '/t'], part);
  }
});

test('a body with several strings no store can keep names every one of them, in the order they are written', async () => {
  // Decision 0001: every error at once. Only one was named (for members, the last written), the
  // next only after the first was mended.
  const { validatorCompiler } = await import('../../src/http/validation.ts');
  const validate = validatorCompiler({ schema: { type: 'object' }, httpPart: 'body', method: 'POST', url: '/x' } as never) as unknown as ((d: unknown) => boolean) & { errors: { instancePath: string }[] };
  const body = { x: '\ud800', n: { ['k\u0000']: ['ok', 'a\udfff'] }, y: 'fine', z: ['\u0000'] };
  assert.equal(validate(body), false);
  assert.deepEqual(validate.errors.map((e) => e.instancePath), ['/x', '/n/k\u0000', '/n/k\u0000/1', '/z/0']);
  let deep: unknown = ['\ud800', 'ok', '\udc00'];
  for (let i = 0; i < 50_000; i++) deep = { k: deep };
  assert.equal(validate(deep), false);
  assert.deepEqual(validate.errors.map((e) => e.instancePath), [`${'/k'.repeat(50_000)}/0`, `${'/k'.repeat(50_000)}/2`]);
});

test('an invalid_request names the part of the request that failed in words, not Fastify\'s names for them', async () => {
  const { toProblem } = await import('../../src/http/errors.ts');
  const failed = (validationContext: string) => toProblem(Object.assign(new Error('invalid'), {
    validationContext, validation: [{ keyword: 'type', instancePath: '/x', schemaPath: '#', params: { type: 'string' }, message: 'must be string' }],
  }) as never);
  assert.equal(failed('body').detail, 'the request body is not valid; see errors');
  assert.equal(failed('querystring').detail, 'the query string is not valid; see errors');
  assert.equal(failed('params').detail, 'the path parameters are not valid; see errors');
  assert.equal(failed('headers').detail, 'the request headers are not valid; see errors');
});
