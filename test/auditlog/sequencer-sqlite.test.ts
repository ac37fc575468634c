// The SQLite sequencer finds waiting events by seq after the last sequenced one and sets leaf
// indexes by rowid, in one statement for a consecutive run. Gaps in seq (a rolled-back insert, a
// row written with an explicit seq) must still give gapless leaf indexes in seq order, and leaves
// that hash to what a verifier recomputes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { recordAudit } from '../../src/services/audit/record.ts';
import { ensureLogState, eventRecord } from '../../src/services/auditlog/log.ts';
import { sequencePending } from '../../src/services/auditlog/sequencer.ts';
import { leafHashOfEvent } from '../../src/domain/auditlog/leaf.ts';
import { appendLeaves } from '../../src/domain/auditlog/tree.ts';

const sqlite = backends().find((b) => b.name === 'sqlite')!;

test('SQLite sequencing: gapless leaf indexes in seq order across seq gaps, in several batches', async () => {
  const ts = await sqlite.open();
  try {
    const store = ts.store;
    await ensureLogState(store);
    const record = (i: number) => store.transaction((trx) => recordAudit(trx, { projectId: 'prj_x', kind: 'test', actor: 'system', data: { i } }));
    for (let i = 0; i < 5; i++) await record(i);
    // A gap: an insert rolled back inside a transaction that commits other work.
    await store.transaction(async (trx) => {
      await sql`savepoint gap`.execute(trx);
      await recordAudit(trx, { projectId: 'prj_x', kind: 'test', actor: 'system', data: { rolled: 'back' } });
      await sql`rollback to savepoint gap`.execute(trx);
      await sql`release savepoint gap`.execute(trx);
    });
    // Another: a row placed further on.
    await sql`insert into audit_events (seq, id, project_id, kind, actor, created_at, data, leaf_index)
      values ((select max(seq) from audit_events) + 7, 'aud_gap', 'prj_x', 'test', 'system', '2026-01-01T00:00:00.000Z', '{"i":"gap"}', null)`.execute(store.db);
    for (let i = 5; i < 12; i++) await record(i);
    assert.equal(await sequencePending(store, { batch: 4 }), 13);
    const rows = await store.db.selectFrom('audit_events').select(['seq', 'id', 'project_id', 'kind', 'actor', 'created_at', 'data', 'leaf_index']).orderBy('seq').execute();
    assert.deepEqual(rows.map((r) => Number(r.leaf_index)), rows.map((_, i) => i), 'leaf indexes follow seq order without gaps');
    const expected = appendLeaves(0, rows.map((r) => leafHashOfEvent(eventRecord(r))), () => { throw new Error('no peaks before the first leaf'); });
    const state = await ensureLogState(store);
    assert.equal(state.size, 13);
    assert.deepEqual(Buffer.from(state.root), Buffer.from(expected.root), 'the root is the one a verifier recomputes from the rows');
    await record(99);
    assert.equal(await sequencePending(store), 1, 'later events join after the last sequenced one');
  } finally { await ts.cleanup(); }
});
