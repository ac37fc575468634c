// Migration 0908: a witness problem put right by a later cosignature was told by comparing their
// timestamps; a cosignature now deletes it. The problems the old reading counted as put right go,
// and one recorded after the newest cosignature stays open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { openWitnessProblem } from '../../src/services/auditlog/checkpointer.ts';
import { up } from '../../src/store/migrations/0908_witness_problem_cleared.ts';

const checkpoint = (size: number, witnessed_at: string | null) =>
  ({ size, root: new Uint8Array(32), note: `note ${size}`, created_at: '2026-01-01T00:00:00.000Z', cosignatures: witnessed_at ? 'line' : null, witnessed_at });

for (const backend of backends()) {
  test(`migration 0908 deletes the witness problem a later cosignature put right, and keeps an open one (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const { db } = ts.store;
      await db.insertInto('audit_checkpoints').values([checkpoint(2, '2026-01-01T00:10:00.000Z'), checkpoint(4, '2026-01-01T00:20:00.000Z'), checkpoint(6, null)]).execute();
      const problem = { id: 1, kind: 'unavailable', reason: 'down', at: '2026-01-01T00:30:00.000Z' };
      await db.insertInto('audit_witness_problem').values(problem).execute();
      await up(db);
      assert.equal((await openWitnessProblem(db))?.at, problem.at, 'recorded after the newest cosignature: open');
      await db.updateTable('audit_witness_problem').set({ at: '2026-01-01T00:15:00.000Z' }).execute();
      await up(db);
      assert.equal(await openWitnessProblem(db), null, 'recorded before the newest cosignature: put right');
    } finally { await ts.cleanup(); }
  });
}
