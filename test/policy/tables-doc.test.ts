// docs/policy-lifecycle.md's "Tables" names tables and columns a migrated store has, on every
// backend (it once named `decisions`, which migration 0604 dropped).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';

const doc = readFileSync(new URL('../../docs/policy-lifecycle.md', import.meta.url), 'utf8');
const section = doc.split('\n## Tables\n')[1]!.split('\n## ')[0]!;
const named = [...section.matchAll(/`([a-z_]+)\(([^)`]*)\)`/g)].map((m) => ({
  table: m[1]!,
  columns: m[2]!.split(',').map((c) => c.trim().split(' ')[0]!).filter((c) => /^[a-z_]+$/.test(c)),
}));

for (const backend of backends()) {
  test(`docs/policy-lifecycle.md: every table and column in "Tables" exists (${backend.name})`, async () => {
    assert.ok(named.length >= 2, 'the section is read');
    const ts = await backend.open();
    try {
      // Selecting the columns from no rows fails, on either engine, for a missing table or column.
      for (const { table, columns } of named) {
        await assert.doesNotReject(sql`select ${sql.join([sql`1`, ...columns.map((c) => sql.ref(c))])} from ${sql.table(table)} where 1 = 0`.execute(ts.store.db), `${table}(${columns.join(', ')})`);
      }
    } finally { await ts.cleanup(); }
  });
}
