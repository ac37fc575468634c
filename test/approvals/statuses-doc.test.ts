// docs/approvals.md's "Statuses and transitions" names every status the code gives an obligation,
// in its table and in its diagram, and no other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { APPROVAL_STATUSES } from '../../src/domain/approval/status.ts';

const doc = readFileSync(new URL('../../docs/approvals.md', import.meta.url), 'utf8');
const section = doc.split('\n## Statuses and transitions\n')[1]!.split('\n## ')[0]!;

test('docs/approvals.md: the status table and the state diagram name exactly the statuses of the code', () => {
  const table = [...section.matchAll(/^\| `([a-z]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual(table, [...APPROVAL_STATUSES]);
  const diagram = /```\n([\s\S]*?)```/.exec(section)![1]!;
  const named = new Set(diagram.match(/\b[a-z]+\b/g)!.filter((w) => (APPROVAL_STATUSES as readonly string[]).includes(w)));
  assert.deepEqual([...named].sort(), [...APPROVAL_STATUSES].sort());
});
