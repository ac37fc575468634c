// Keeps docs/policy-language.md honest: every example it shows validates and decides as shown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { compilePolicy, evaluate, validatePolicy } from '../../../src/domain/policy/index.ts';
import { isRequestResource } from '../../../src/domain/policy/formats.ts';

const md = readFileSync(new URL('../../../docs/policy-language.md', import.meta.url), 'utf8');
const blocks = [...md.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1] as string);

test('the example document validates and gives the documented result', () => {
  const doc = validatePolicy(JSON.parse(blocks[0] as string));
  assert.ok(doc.ok);
  const shown = JSON.parse(blocks.find((b) => b.startsWith('{ "decision"')) as string);
  const result = evaluate(compilePolicy(doc.policy), { action: 'payments.create', agent: 'did:key:z6MkAlice', amount: { minor: 9000, currency: 'EUR' } });
  assert.deepEqual(result, shown);
});

test('every condition example validates', () => {
  const conditions: unknown[] = [];
  for (const block of blocks.slice(1)) {
    if (block.startsWith('{ "op": "and"')) conditions.push(JSON.parse(block));
    else for (const line of block.split('\n')) if (line.startsWith('{ "op"')) conditions.push(JSON.parse(line));
  }
  assert.ok(conditions.length >= 18);
  for (const when of conditions) {
    const result = validatePolicy({ spec_version: '1', rules: [{ id: 'x', effect: 'ALLOW', when }] });
    assert.ok(result.ok, JSON.stringify(when));
  }
});

test('the matches_resource examples match and miss as the text says, and it counts them right', () => {
  const said = /`(resource:\/\/[^`]+)` matches `([^`]+)` and `([^`]+)`, not `([^`]+)`\s+nor `([^`]+)`\. `(resource:\/\/[^`]+)` matches all (\w+)\./.exec(md);
  assert.ok(said, 'the sentence is read');
  const [, narrow, yes1, yes2, no1, no2, wide, count] = said as unknown as string[];
  const matches = (pattern: string, resource: string) => {
    const doc = validatePolicy({ spec_version: '1', rules: [{ id: 'x', effect: 'ALLOW', when: { op: 'matches_resource', input: 'resource', value: pattern } }] });
    assert.ok(doc.ok, pattern);
    return evaluate(compilePolicy(doc.policy), { resource }).decision === 'ALLOW';
  };
  const all = [yes1!, yes2!, no1!, no2!];
  assert.deepEqual(all.map((r) => matches(narrow!, r)), [true, true, false, false]);
  assert.deepEqual(all.map((r) => matches(wide!, r)), [true, true, true, true]);
  assert.equal(count, ['one', 'two', 'three', 'four'][all.length - 1]);
});

test('the characters the normal form escapes are those a requested resource may hold escaped and not as is', () => {
  const listed = /percent-encodes only what a resource cannot hold as is\s+\(bytes 0x80 and above, space, (`+) ?(.+?) ?\1;/.exec(md);
  assert.ok(listed, 'the list is read');
  const chars = listed![2]!.split(' ');
  assert.ok(chars.length >= 10, chars.join(' '));
  for (const c of [...chars, ' ']) {
    const hex = c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0');
    assert.ok(isRequestResource(`resource://a/x%${hex}`), `%${hex} (${c}) is accepted`);
    assert.ok(!isRequestResource(`resource://a/x${c}`), `${c} as is is refused`);
  }
  assert.ok(isRequestResource('resource://docs/caf%C3%A9'));
  // What the text says is refused escaped stays refused.
  for (const hex of ['2F', '5C', '2E', '25', '23', '3F', '00', '1F', '7F']) assert.ok(!isRequestResource(`resource://a/x%${hex}`), `%${hex}`);
});
