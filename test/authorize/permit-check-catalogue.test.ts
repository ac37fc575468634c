// The checks a permit_invalid detail starts with, as docs/reason-codes.md lists them, are exactly
// those src/ can name: the domain's (verification, time, coverage) and the service's own (subject,
// revocation and the live counters, checked in the commit). A check added on either side alone fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The string literals of the union type `name` declared in `file`. */
function unionMembers(file: string, name: string): string[] {
  const body = new RegExp(`export type ${name} =([^;]+);`).exec(readFileSync(file, 'utf8'))?.[1];
  assert.ok(body, `${name} is declared in ${file}`);
  return [...body.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!);
}

test('every check a permit_invalid detail can start with is documented, and every documented one is named in src/', () => {
  const dir = 'src/services/authorize';
  const service = readdirSync(dir).map((f) => readFileSync(join(dir, f), 'utf8')).join('\n');
  // The service's own checks: a `check: '…'` it sets, or a refused spend's detail, starting with `<check>: `.
  const spend = readFileSync(join(dir, 'spend.ts'), 'utf8');
  const own = [...service.matchAll(/check: '([a-z_]+)'/g), ...spend.matchAll(/return `([a-z_]+): /g)].map((m) => m[1]!);
  assert.ok(own.includes('uses_exhausted') && own.includes('revoked'), `the service's checks are read: ${own}`);
  const named = new Set([...unionMembers('src/domain/permit/types.ts', 'PermitCheck'), ...unionMembers('src/domain/permit/coverage.ts', 'CoverageCheck'), ...own]);
  const row = readFileSync('docs/reason-codes.md', 'utf8').split('\n').find((l) => l.startsWith('| `permit_invalid` |'));
  assert.ok(row, 'the permit_invalid row is read');
  const [list, unreachable] = row.split('starts with the failed check:')[1]!.split('Four of these are');
  const documented = new Set([...list!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!));
  assert.deepEqual([...named].filter((c) => !documented.has(c)).sort(), [], 'named in src/ but not documented');
  assert.deepEqual([...documented].filter((c) => !named.has(c)).sort(), [], 'documented but named nowhere in src/');
  // The four the route never reaches (its schema refuses the input first) are among them.
  const never = [...unreachable!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!).filter((c) => c !== 'permit_invalid');
  assert.deepEqual(never, ['resource_invalid', 'amount_invalid', 'time_invalid', 'verification_error']);
  assert.ok(never.every((c) => named.has(c)));
});
