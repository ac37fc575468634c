// Every "<status> `<code>`" (or "`<status> <code>`") the README and docs/*.md name is an answer the
// service gives: a status and problem code some route of the OpenAPI document declares, or one the HTTP layer sends before
// any route (src/http: `new Problem(408, 'request_timeout', …)`). A code that is only an entry of
// `errors` (`bad_format` at `/reason`) is written after its problem's code, `400 \`invalid_request\``:
// a reader comparing the docs with an answer looks for the code in `code`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { codesIn } from '../support/declared-problems.ts';

test('each status and problem code the README and docs/*.md name is one the service answers', async () => {
  const svc = await startService(backends()[0]!);
  let doc: { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> };
  try { doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json(); } finally { await svc.stop(); }
  const answered = new Set<string>();
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item)) for (const [status, res] of Object.entries(op.responses)) for (const code of codesIn(res.description)) answered.add(`${status} ${code}`);
  }
  const routed = answered.size;
  for (const file of readdirSync('src/http', { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))) {
    for (const m of readFileSync(join('src/http', file), 'utf8').matchAll(/new Problem\((\d{3}), '([a-z_]+)'/g)) answered.add(`${m[1]} ${m[2]}`);
  }
  assert.ok(routed > 50 && answered.has('431 headers_too_large'), 'the declared and the connection-level answers are read');

  // The decisions are records of their day; the docs and the README say what the service does now.
  const pages = ['README.md', ...readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
  const named: string[] = [];
  const unknown: string[] = [];
  for (const page of pages) {
    for (const m of readFileSync(page, 'utf8').matchAll(/\b([1-5]\d\d) `([a-z_]+)`|`([1-5]\d\d) ([a-z_]+)`/g)) {
      named.push(m[0]);
      if (!answered.has(`${m[1] ?? m[3]} ${m[2] ?? m[4]}`)) unknown.push(`${page}: ${m[0]}`);
    }
  }
  assert.ok(named.length > 80, `the docs' status codes are read (${named.length})`);
  assert.deepEqual(unknown, []);
});
