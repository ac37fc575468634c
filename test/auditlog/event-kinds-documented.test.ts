// Spec 6.4 leaves the kinds of audit event to the service, so docs/ must name each one the service
// writes: a reader of the log (or of a proof's `event.kind`) finds what it records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const textOf = (dir: string, ext: string): string => readdirSync(dir, { withFileTypes: true })
  .map((e) => e.isDirectory() ? textOf(join(dir, e.name), ext) : e.name.endsWith(ext) ? readFileSync(join(dir, e.name), 'utf8') : '').join('\n');

test('every audit event kind written in src/ is named in docs/', () => {
  const src = textOf('src', '.ts');
  const kinds = new Set<string>(['decision']);
  for (const m of src.matchAll(/kind: '([a-z_]+\.[a-z_]+)'/g)) kinds.add(m[1]!);
  // Session events are passed by name to one recorder (services/identity/sessions.ts).
  for (const m of src.matchAll(/'(session\.[a-z_]+)'/g)) kinds.add(m[1]!);
  assert.ok(kinds.size >= 30, `found ${kinds.size} kinds: the patterns above still find what the services write`);
  const docs = readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => readFileSync(join('docs', f), 'utf8')).join('\n');
  const missing = [...kinds].filter((k) => !docs.includes(`\`${k}\``)).sort();
  assert.deepEqual(missing, [], 'audit event kinds no page of docs/ names');
});
