// Keeps docs/policy-language.md honest: every example it shows validates and decides as shown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { compilePolicy, evaluate, validatePolicy } from '../../../src/domain/policy/index.ts';

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
