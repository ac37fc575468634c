// A store that lacks a node a signed checkpoint covers (a row deleted, a partial restore): the proof
// route says the log is damaged, with a code of its own, and the verification route says INVALID.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type Backend } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { addEvents, restartAuditService, startAuditService } from './support.ts';
import { ensureLogState, LogStateMissing } from '../../src/services/auditlog/log.ts';
import { recordAudit } from '../../src/services/audit/record.ts';

/**
 * For the cases that tamper with a leaf index: a log its own witness cosigns, three events
 * sequenced, and the requests for an event's proof (by key) and its verification (by an AUDITOR).
 * The caller stops `a`; a set-up that fails stops it here.
 */
async function threeSequencedEvents(backend: Backend) {
  const a = await startAuditService(backend, 'own');
  try {
    const store = a.svc.ts.store;
    const auditor = await consoleMember(a.svc, ['AUDITOR']);
    const key = await a.svc.keyHeader([]);
    const ids = await addEvents(store, a.svc.projectId, 3);
    await a.svc.auditLog.tick({ force: true });
    const proof = (id: string) => a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/${id}/proof`, headers: key });
    const verify = (id: string) => a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: id } });
    return { a, store, ids, proof, verify };
  } catch (e) { await a.stop(); throw e; }
}

for (const backend of backends()) {
  test(`a proof the damaged store cannot assemble is 500 log_damaged, not an anonymous fault (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    try {
      const ids = await addEvents(a.svc.ts.store, a.svc.projectId, 4);
      await a.svc.auditLog.tick({ force: true });
      const key = await a.svc.keyHeader([]);
      const proof = (id: string) => a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/${id}/proof`, headers: key });
      assert.equal((await proof(ids[1]!)).statusCode, 200);
      // Leaf 0's hash is its event's (decision 0603): without its row, leaf 1's path cannot be built.
      const first = await a.svc.ts.store.db.selectFrom('audit_events').select('id').where('leaf_index', '=', 0).executeTakeFirstOrThrow();
      await a.svc.ts.store.db.deleteFrom('audit_events').where('id', '=', first.id).execute();
      const damaged = await proof(ids.find((id) => id !== first.id)!);
      assert.equal(damaged.statusCode, 500, damaged.body);
      assert.equal(damaged.json().code, 'log_damaged');
      assert.match(damaged.json().detail, /the log lacks a node/);
      const auditor = await consoleMember(a.svc, ['AUDITOR']);
      const v = await a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: ids.find((id) => id !== first.id) } });
      assert.equal(v.json().verification, 'INVALID', v.body);
      assert.match(v.json().reason, /the tree lacks a node the inclusion path of leaf \d+ needs: node 0\/0 not found/, 'which node, as the proof route says');
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`a consistency proof the damaged store cannot assemble is 500 log_damaged, not an anonymous fault (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    try {
      await addEvents(a.svc.ts.store, a.svc.projectId, 4);
      await a.svc.auditLog.tick({ force: true });
      const key = await a.svc.keyHeader([]);
      const consistency = () => a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/consistency?from=2&to=4`, headers: key });
      assert.equal((await consistency()).statusCode, 200);
      // The subtree of leaves 0 and 1 is the root at size 2: without its row neither root nor proof can be built.
      await a.svc.ts.store.db.deleteFrom('audit_nodes').where('level', '=', 1).where('idx', '=', 0).execute();
      const damaged = await consistency();
      assert.equal(damaged.statusCode, 500, damaged.body);
      assert.equal(damaged.json().code, 'log_damaged');
      assert.match(damaged.json().detail, /the log lacks a node the consistency proof from 2 to 4 needs/);
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`a log whose state row is lost refuses to start instead of beginning a second log under a new origin (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    try {
      const store = a.svc.ts.store;
      await addEvents(store, a.svc.projectId, 3);
      await a.svc.auditLog.tick({ force: true });
      const before = await store.db.selectFrom('audit_log_state').selectAll().executeTakeFirstOrThrow();
      await a.svc.close();
      // A restore that left the state table out: events, nodes and checkpoints are there, the row is not.
      await store.db.deleteFrom('audit_log_state').execute();
      await assert.rejects(restartAuditService(a), (e: Error) => e instanceof LogStateMissing && /audit_log_state.*is missing while the log holds sequenced events/.test(e.message));
      assert.equal(await store.db.selectFrom('audit_log_state').selectAll().executeTakeFirst(), undefined, 'no new origin was invented');
      // Put back from the same copy, the log starts and keeps its name and size.
      await store.db.insertInto('audit_log_state').values(before).execute();
      const b = await restartAuditService(a);
      try {
        assert.equal((await ensureLogState(store)).origin, before.origin);
        assert.equal((await ensureLogState(store)).size, Number(before.size));
      } finally { await b.stop(); }
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`a state row deleted while the service runs makes the proof, consistency and log routes 500 log_damaged naming it, not internal_error (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    try {
      const store = a.svc.ts.store;
      const ids = await addEvents(store, a.svc.projectId, 3);
      await a.svc.auditLog.tick({ force: true });
      const key = await a.svc.keyHeader([]);
      const base = `/v1/projects/${a.svc.projectId}/audit`;
      const urls = [`${base}/${ids[0]}/proof`, `${base}/consistency?from=1&to=3`, `${base}/log`];
      for (const url of urls) assert.equal((await a.svc.app.inject({ method: 'GET', url, headers: key })).statusCode, 200, url);
      await store.db.deleteFrom('audit_log_state').execute();
      for (const url of urls) {
        const r = await a.svc.app.inject({ method: 'GET', url, headers: key });
        assert.equal(r.statusCode, 500, `${url}: ${r.body}`);
        assert.equal(r.json().code, 'log_damaged', url);
        assert.match(r.json().detail, /audit_log_state.*is missing while the log holds sequenced events/, url);
      }
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`an event whose stored data is no longer JSON lists as 500 log_damaged, not the caller's malformed_json (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    try {
      const ids = await addEvents(a.svc.ts.store, a.svc.projectId, 3);
      await a.svc.auditLog.tick({ force: true });
      await a.svc.ts.store.db.updateTable('audit_events').set({ data: '{"n": 1' }).where('id', '=', ids[1]!).execute();
      const key = await a.svc.keyHeader(['AUDITOR']);
      const auditor = await consoleMember(a.svc, ['AUDITOR']);
      for (const [url, headers] of [[`/v1/projects/${a.svc.projectId}/audit`, key], [`/v1/console/projects/${a.svc.projectId}/audit`, auditor.get]] as const) {
        const listed = await a.svc.app.inject({ method: 'GET', url, headers });
        assert.equal(listed.statusCode, 500, listed.body);
        assert.equal(listed.json().code, 'log_damaged');
        assert.match(listed.json().detail, new RegExp(`audit event ${ids[1]} is not JSON`));
      }
      // Its proof is not exported with the damaged text standing in for the record: said as the list says it.
      const proof = await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/${ids[1]}/proof`, headers: key });
      assert.equal(proof.statusCode, 500, proof.body);
      assert.equal(proof.json().code, 'log_damaged');
      const v = await a.svc.app.inject({ method: 'POST', url: `/v1/console/projects/${a.svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: ids[1] } });
      assert.equal(v.json().verification, 'INVALID', v.body);
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`with the newest sequenced event's row deleted, new events take the next leaf indexes: the log's history is not appended again (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    try {
      const store = a.svc.ts.store;
      await addEvents(store, a.svc.projectId, 4);
      await a.svc.auditLog.tick({ force: true });
      const { size } = await ensureLogState(store);
      await store.db.deleteFrom('audit_events').where('leaf_index', '=', size - 1).execute();
      const [added] = await addEvents(store, a.svc.projectId, 1);
      await a.svc.auditLog.tick({ force: true });
      const row = await store.db.selectFrom('audit_events').select('leaf_index').where('id', '=', added!).executeTakeFirstOrThrow();
      assert.equal(Number(row.leaf_index), size, 'the new event is the next leaf');
      assert.equal((await ensureLogState(store)).size, size + 1, 'no sequenced event was appended a second time');
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`a log that lacks a node its next checkpoint needs is recorded as rolled_back, and its proofs say so, instead of failing every tick (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    try {
      const store = a.svc.ts.store;
      const auditor = await consoleMember(a.svc, ['AUDITOR']);
      const key = await a.svc.keyHeader([]);
      // An odd size: its newest leaf is a peak of its own, which the next consistency proof needs.
      await addEvents(store, a.svc.projectId, (await ensureLogState(store)).size % 2 === 0 ? 3 : 2);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      const { size } = await ensureLogState(store);
      assert.equal(size % 2, 1);
      // The newest leaf's row deleted: the consistency proof from the witnessed size (and, read back, the tree's right edge) needs it.
      await store.db.deleteFrom('audit_events').where('leaf_index', '=', size - 1).execute();
      const [added] = await addEvents(store, a.svc.projectId, 1);
      const t = await a.svc.auditLog.tick({ force: true });
      assert.equal(t.witness?.kind, 'rolled_back', JSON.stringify(t));
      const dashboard = await a.svc.app.inject({ method: 'GET', url: `/v1/console/projects/${a.svc.projectId}/dashboard`, headers: auditor.get });
      assert.equal(dashboard.json().audit_log.witness_problem?.kind, 'rolled_back', dashboard.body);
      assert.match(dashboard.json().audit_log.witness_problem.reason, new RegExp(`lacks a node .*node 0/${size - 1} not found`));
      const p = await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/${added}/proof`, headers: key });
      assert.equal(p.statusCode, 409, p.body);
      assert.match(p.json().detail, /none will until the log is put right/);
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`an event whose leaf index is past the tree is 500 log_damaged and INVALID, not proof_not_ready forever (${backend.name})`, async () => {
    const { a, store, ids, proof, verify } = await threeSequencedEvents(backend);
    try {
      const { size } = await ensureLogState(store);
      // The sequencer writes a leaf index and the size that counts it in one transaction: an index the tree does not reach was put there by hand.
      await store.db.updateTable('audit_events').set({ leaf_index: size + 100 }).where('id', '=', ids[1]!).execute();
      const p = await proof(ids[1]!);
      assert.equal(p.statusCode, 500, p.body);
      assert.equal(p.json().code, 'log_damaged');
      assert.match(p.json().detail, new RegExp(`leaf ${size + 100}, but the tree holds ${size} leaves`));
      const v = await verify(ids[1]!);
      assert.equal(v.statusCode, 200, v.body);
      assert.equal(v.json().verification, 'INVALID', v.body);
      assert.match(v.json().reason, new RegExp(`leaf ${size + 100}, but the tree holds ${size} leaves`));
      // An event the sequencer has not reached yet is still only not ready.
      const [waiting] = await addEvents(store, a.svc.projectId, 1);
      assert.equal((await proof(waiting!)).statusCode, 409);
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`a state row set back under its checkpoint is recorded as rolled_back even while sequencing fails on it (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    try {
      const store = a.svc.ts.store;
      const auditor = await consoleMember(a.svc, ['AUDITOR']);
      await addEvents(store, a.svc.projectId, 3);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      const { size } = await ensureLogState(store);
      // Its size edited down by hand: the next leaf index it gives is one an event already holds.
      await store.db.updateTable('audit_log_state').set({ size: size - 1 }).execute();
      await addEvents(store, a.svc.projectId, 1);
      await a.svc.close();
      // The start's tick checks continuity, then fails to sequence (the index is taken).
      const b = await restartAuditService(a);
      try {
        const dashboard = await b.app.inject({ method: 'GET', url: `/v1/console/projects/${b.projectId}/dashboard`, headers: auditor.get });
        assert.equal(dashboard.json().audit_log.witness_problem?.kind, 'rolled_back', dashboard.body);
        assert.match(dashboard.json().audit_log.witness_problem.reason, new RegExp(`signed a checkpoint of size ${size} .* holds fewer events`));
      } finally { await b.stop(); }
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`an event whose leaf index was erased is log_damaged and is not appended again, not proof_not_ready forever (${backend.name})`, async () => {
    const { a, store, ids, proof, verify } = await threeSequencedEvents(backend);
    try {
      const { size } = await ensureLogState(store);
      await store.db.updateTable('audit_events').set({ leaf_index: null }).where('id', '=', ids[0]!).execute();
      // The sequencer leaves it alone: appended a second time, it would be a duplicate leaf.
      await a.svc.auditLog.tick({ force: true });
      assert.equal((await ensureLogState(store)).size, size, 'the erased event was not appended again');
      const row = await store.db.selectFrom('audit_events').select('leaf_index').where('id', '=', ids[0]!).executeTakeFirstOrThrow();
      assert.equal(row.leaf_index, null);
      const p = await proof(ids[0]!);
      const v = await verify(ids[0]!);
      // SQLite sequences in write order and never looks behind the last sequenced event; PostgreSQL
      // takes only events still marked pending, a mark the sequencer clears as it sets the index.
      const why = backend.name === 'sqlite' ? 'yet the log has sequenced every event written through seq \\d+, and it is seq \\d+' : 'yet the log sequenced it';
      for (const r of [p, v]) {
        assert.equal(r.statusCode, 500, r.body);
        assert.equal(r.json().code, 'log_damaged');
        assert.match(r.json().detail, new RegExp(`audit event ${ids[0]} has no leaf index, ${why}`));
      }
      // An event the sequencer has not reached yet is still only not ready, and is the next leaf.
      const [waiting] = await addEvents(store, a.svc.projectId, 1);
      assert.equal((await proof(waiting!)).statusCode, 409);
      await a.svc.auditLog.tick({ force: true });
      const next = await store.db.selectFrom('audit_events').select('leaf_index').where('id', '=', waiting!).executeTakeFirstOrThrow();
      assert.equal(Number(next.leaf_index), size);
    } finally { await a.stop(); }
  });
}

for (const backend of backends()) {
  test(`the newest event's erased leaf index is log_damaged at once and never appended again; an event written after it waits (${backend.name})`, async () => {
    const { a, store, ids, proof, verify } = await threeSequencedEvents(backend);
    try {
      const { size } = await ensureLogState(store);
      const newest = ids[2]!;
      const row = await store.db.selectFrom('audit_events').select('leaf_index').where('id', '=', newest).executeTakeFirstOrThrow();
      assert.equal(Number(row.leaf_index), size - 1, 'the newest leaf');
      await store.db.updateTable('audit_events').set({ leaf_index: null }).where('id', '=', newest).execute();
      // No later event is sequenced yet: the state row's record of the last one says it is damage.
      for (const r of [await proof(newest), await verify(newest)]) {
        assert.equal(r.statusCode, 500, r.body);
        assert.equal(r.json().code, 'log_damaged');
        assert.match(r.json().detail, new RegExp(`audit event ${newest} has no leaf index`));
      }
      // Written on another connection than the service's sequencer, and not sequenced yet: only not ready.
      const [waiting] = await addEvents(store, a.svc.projectId, 1);
      const w = await proof(waiting!);
      assert.equal(w.statusCode, 409, w.body);
      assert.equal(w.json().code, 'proof_not_ready');
      await a.svc.auditLog.tick({ force: true });
      const after = await store.db.selectFrom('audit_events').select(['id', 'leaf_index']).where('id', 'in', [newest, waiting!]).execute();
      assert.equal(after.find((r) => r.id === newest)!.leaf_index, null, 'the erased event is not appended a second time');
      assert.equal(Number(after.find((r) => r.id === waiting)!.leaf_index), size, 'the waiting event is the next leaf');
      assert.equal((await ensureLogState(store)).size, size + 1);
      assert.equal((await proof(newest)).statusCode, 500);
    } finally { await a.stop(); }
  });
}

const postgres = backends().find((b) => b.name === 'postgres');

test('on PostgreSQL, an event that commits after a later-written one is sequenced, not taken for an erased one', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const a = await startAuditService(postgres!, 'none');
  try {
    const store = a.svc.ts.store;
    const key = await a.svc.keyHeader([]);
    let late = '';
    let early = '';
    await store.transaction(async (trx) => {
      // Written first (the lower seq), committed last: meanwhile a later event is sequenced.
      late = await recordAudit(trx, { projectId: a.svc.projectId, kind: 'test.event', actor: 'system', data: { late: true } });
      [early] = await addEvents(store, a.svc.projectId, 1) as [string];
      await a.svc.auditLog.tick({ force: true });
    });
    const seqs = await store.db.selectFrom('audit_events').select(['id', 'seq', 'leaf_index']).where('id', 'in', [late, early]).execute();
    const row = (id: string) => seqs.find((r) => r.id === id)!;
    assert.ok(Number(row(late).seq) < Number(row(early).seq), 'the late event has the lower seq');
    assert.notEqual(row(early).leaf_index, null);
    assert.equal(row(late).leaf_index, null);
    assert.equal((await a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit/${late}/proof`, headers: key })).statusCode, 409, 'not ready, not log_damaged');
    const { size } = await ensureLogState(store);
    await a.svc.auditLog.tick({ force: true });
    const sequenced = await store.db.selectFrom('audit_events').select('leaf_index').where('id', '=', late).executeTakeFirstOrThrow();
    assert.equal(Number(sequenced.leaf_index), size, 'the late event is the next leaf');
  } finally { await a.stop(); }
});
