// Inline sequencing on the SQLite writer (services/auditlog/inline.ts): a batch's own events take
// their leaf indexes as they are written. The log must stay exactly what a verifier recomputes
// from the rows, through failed units, events other connections wrote, and an event written
// around the appender (which must fail its batch, not corrupt the tree).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { recordAudit } from '../../src/services/audit/record.ts';
import { ensureLogState, eventRecord } from '../../src/services/auditlog/log.ts';
import { sequencePending } from '../../src/services/auditlog/sequencer.ts';
import { writerBatches, type WriterBatches } from '../../src/services/writer/batches.ts';
import { leafHashOfEvent } from '../../src/domain/auditlog/leaf.ts';
import { appendLeaves } from '../../src/domain/auditlog/tree.ts';
import type { Store } from '../../src/store/store.ts';

const sqlite = backends().find((b) => b.name === 'sqlite')!;

async function assertLogMatchesRows(store: Store, expectedSize: number): Promise<void> {
  const rows = await store.db.selectFrom('audit_events').select(['seq', 'id', 'project_id', 'kind', 'actor', 'created_at', 'data', 'leaf_index', 'leaf_hash']).orderBy('seq').execute();
  assert.equal(rows.length, expectedSize);
  assert.deepEqual(rows.map((r) => r.leaf_index === null ? null : Number(r.leaf_index)), rows.map((_, i) => i), 'leaf indexes follow seq order without gaps');
  const expected = appendLeaves(0, rows.map((r) => leafHashOfEvent(eventRecord(r))), () => { throw new Error('no peaks before the first leaf'); });
  const state = await ensureLogState(store);
  assert.equal(state.size, expectedSize);
  assert.deepEqual(Buffer.from(state.root), Buffer.from(expected.root), 'the root is the one a verifier recomputes from the rows');
  // A single leaf's hash is its event's (decision 0603); every larger complete subtree is stored once.
  // (The one row this test writes with raw SQL, as an old version would have, holds none: readers hash its text.)
  for (const [i, r] of rows.entries()) {
    if (r.id === 'aud_other') { assert.equal(r.leaf_hash, null); continue; }
    assert.deepEqual(Buffer.from(r.leaf_hash!), Buffer.from(expected.nodes.find((n) => n.level === 0 && n.index === i)!.hash), `${r.id}: its row holds its leaf hash`);
  }
  const nodes = await store.db.selectFrom('audit_nodes').select(['level', 'idx', 'hash']).orderBy('level').orderBy('idx').execute();
  const subtrees = expected.nodes.filter((n) => n.level > 0).sort((x, y) => x.level - y.level || x.index - y.index);
  assert.deepEqual(nodes.map((n) => [Number(n.level), Number(n.idx), Buffer.from(n.hash).toString('hex')]),
    subtrees.map((n) => [n.level, n.index, Buffer.from(n.hash).toString('hex')]), 'one stored node per completed subtree of two leaves or more, none twice');
}

const event = (i: number | string) => ({ projectId: 'prj_x', kind: 'test', actor: 'system', data: { i } });

/** A fresh SQLite store with a started log, and the writer thread's batches run on this thread. */
async function withWriter(body: (store: Store, batches: WriterBatches, record: (i: number | string) => Promise<string>) => Promise<void>): Promise<void> {
  const ts = await sqlite.open();
  try {
    await ensureLogState(ts.store);
    const batches = writerBatches(ts.store);
    await body(ts.store, batches, (i) => batches.run((trx, env) => recordAudit(trx, event(i), env)));
  } finally { await ts.cleanup(); }
}

test('inline sequencing: batches of the writer give their events leaf indexes as they are written', () => withWriter(async (store, batches, record) => {
  // The first batch finds no frontier yet: it sequences the usual way, and later ones go inline.
  await record(0);
  assert.equal(batches.inlineBatches, 0);
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: 10 }, (_, i) => record(`${round}.${i}`)));
  }
  assert.equal(batches.inlineBatches, batches.commits - 1, 'every batch after the first went inline');
  await assertLogMatchesRows(store, 31);

  // A unit that fails after writing its event is rolled back with its leaf; the others stand.
  const outcomes = await Promise.allSettled([0, 1, 2, 3].map((i) => batches.run(async (trx, env) => {
    await recordAudit(trx, event(`f${i}`), env);
    await recordAudit(trx, event(`f${i}b`)); // no target: still through the appender
    if (i % 2 === 1) throw new Error('unit fails');
  })));
  assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected']);
  await assertLogMatchesRows(store, 35);

  // An event another connection wrote (the HTTP thread's own transactions): the next batch
  // sequences it and its own the usual way, in seq order, and inline resumes after.
  await sql`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index)
    values ('aud_other', 'prj_x', 'test', 'system', '2026-01-01T00:00:00.000Z', '{"i":"other"}', null)`.execute(store.db);
  const inlineBefore = batches.inlineBatches;
  await record('after-other');
  assert.equal(batches.inlineBatches, inlineBefore, 'that batch did not go inline');
  await record('inline-again');
  assert.equal(batches.inlineBatches, inlineBefore + 1, 'the next one did');
  await assertLogMatchesRows(store, 38);
  assert.equal(await sequencePending(store), 0, 'nothing is left waiting');
}));

test('inline sequencing: an event written around the appender fails its whole batch', () => withWriter(async (store, batches, record) => {
  await record(0);
  await record(1);
  const inlineBefore = batches.inlineBatches;
  const results = await Promise.allSettled([
    batches.run((trx, env) => recordAudit(trx, event(2), env)),
    batches.run(async (trx) => {
      await sql`insert into audit_events (id, project_id, kind, actor, created_at, data, leaf_index)
        values ('aud_around', 'prj_x', 'test', 'system', '2026-01-01T00:00:00.000Z', '{}', null)`.execute(trx);
    }),
  ]);
  assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected'], 'nothing of that batch committed');
  assert.equal(batches.inlineBatches, inlineBefore);
  await assertLogMatchesRows(store, 2);
  await record(3);
  await assertLogMatchesRows(store, 3);
}));
