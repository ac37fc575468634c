// jsonString must write exactly what JSON.stringify writes for every string: the decision event's
// canonical text and every leaf hash rest on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isPlainJsonString, jsonString } from '../../src/lib/json-string.ts';

test('jsonString equals JSON.stringify for every string, escapes and lone surrogates included', () => {
  const unit = fc.oneof(fc.constantFrom('"', '\\', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udfff', 'é', '😀'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }));
  let plain = 0;
  fc.assert(fc.property(fc.string({ unit }), (s) => {
    assert.equal(jsonString(s), JSON.stringify(s));
    if (isPlainJsonString(s)) { plain++; assert.equal(JSON.stringify(s), `"${s}"`); }
  }), { numRuns: 5000 });
  assert.ok(plain > 100, `the fast path is taken (${plain} runs)`);
  for (const s of ['', 'did:key:z6Mk', 'a"b', 'a\\b', '\n', '\u001f', 'x\ud83dy', '\ud83d\ude00']) assert.equal(jsonString(s), JSON.stringify(s));
});

test('a string holding a surrogate never takes the fast path, even a well-formed pair', () => {
  assert.equal(isPlainJsonString('😀'), false);
  assert.equal(isPlainJsonString('\ud800'), false);
  assert.equal(isPlainJsonString('plain ascii and é'), true);
});
