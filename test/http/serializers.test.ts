// Response serializers are compiled once per distinct schema (http/serializers.ts): equal schemas,
// even as different objects on different routes, share one; different schemas never do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { sharedSerializers } from '../../src/http/serializers.ts';

const problem = () => ({ type: 'object', properties: { status: { type: 'integer' }, code: { type: 'string' } } });
const route = (schema: unknown, url: string, httpStatus = '400') => ({ schema, url, method: 'POST', httpStatus });

/** The default factory, counting what it compiles. */
function counting() {
  let compiled = 0;
  const inner = SerializerSelector();
  const factory: typeof inner = (external, options) => { const compile = inner(external, options); return (route) => { compiled++; return compile(route); }; };
  return { factory, compiled: () => compiled };
}

test('equal schemas share one serializer; different schemas get their own', () => {
  const count = counting();
  const compile = sharedSerializers(count.factory)({}, {});
  const a = compile(route(problem(), '/v1/a'));
  const b = compile(route(problem(), '/v1/b', '409'));
  assert.equal(a, b, 'the same schema on another route and status is not compiled again');
  const other = compile(route({ type: 'object', properties: { id: { type: 'string' } } }, '/v1/a', '200'));
  assert.notEqual(other, a);
  assert.equal(count.compiled(), 2);
  // What each writes is what fast-json-stringify writes for that schema.
  assert.equal(a({ status: 400, code: 'invalid_request', extra: 1 }), '{"status":400,"code":"invalid_request"}');
  assert.equal(other({ id: 'x', status: 1 }), '{"id":"x"}');
});

test('each set of shared schemas keeps serializers of its own', () => {
  const factory = sharedSerializers();
  const withRef = { type: 'object', properties: { p: { $ref: 'P#' } } };
  const one = factory({ P: { $id: 'P', type: 'object', properties: { n: { type: 'integer' } } } }, {})(route(withRef, '/v1/x'));
  const two = factory({ P: { $id: 'P', type: 'object', properties: { s: { type: 'string' } } } }, {})(route(withRef, '/v1/x'));
  assert.notEqual(one, two);
  assert.equal(one({ p: { n: 1, s: 'a' } }), '{"p":{"n":1}}');
  assert.equal(two({ p: { n: 1, s: 'a' } }), '{"p":{"s":"a"}}');
});

test('without sharing, the default factory compiles every route again', () => {
  const compile = SerializerSelector()({}, {});
  assert.notEqual(compile(route(problem(), '/v1/a')), compile(route(problem(), '/v1/b')));
});
