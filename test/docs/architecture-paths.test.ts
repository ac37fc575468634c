// docs/architecture.md names the files that hold each component and enforce and test each invariant:
// every one it names must exist, so that a file renamed or moved (lib/time.ts's parseInstant, now
// lib/instant.ts) changes the doc with it. A name given short (`sod.ts` in the row of its folder,
// `system/routes.ts`) must be the end of the path of some file of the repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const filesUnder = (dir: string): string[] => readdirSync(dir, { withFileTypes: true })
  .flatMap((e) => e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]);

test('every file docs/architecture.md names exists', () => {
  const doc = readFileSync('docs/architecture.md', 'utf8');
  const files = ['src', 'test', 'scripts'].flatMap(filesUnder);
  // `src/**/*.ts` and `src/store/migrations/NNNN_name.ts` are patterns, not files.
  const named = [...new Set([...doc.matchAll(/`([\w./-]+\.ts)`/g)].map((m) => m[1]!))].filter((p) => !/NNNN|^\.ts$/.test(p));
  assert.ok(named.length > 100, `the doc's file names are read (${named.length})`);
  const missing = named.filter((p) => !existsSync(p) && !existsSync(join('src', p)) && !files.some((f) => f.endsWith(`/${p}`)));
  assert.deepEqual(missing, []);
});

test('the pure helpers of src/lib the doc lists are the ones src/domain reaches', () => {
  const doc = readFileSync('docs/architecture.md', 'utf8');
  const listed = /the pure helpers of `src\/lib`\s+\(([^)]*) and what they import\)/.exec(doc);
  assert.ok(listed, 'the doc lists the helpers');
  const named = [...listed[1]!.matchAll(/`([\w.-]+\.ts)`/g)].map((m) => m[1]!).sort();
  // What src/domain imports from src/lib directly; what those import in turn is "what they import".
  const reached = new Set<string>();
  for (const file of filesUnder('src/domain').filter((f) => f.endsWith('.ts'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/from '(?:\.\.\/)+lib\/([\w.-]+\.ts)'/g)) reached.add(m[1]!);
  }
  assert.deepEqual(named, [...reached].sort());
});
