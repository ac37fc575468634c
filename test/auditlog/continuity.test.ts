// What the checkpointer and the continuity check do when nothing changed, and what they trust: checks
// a mutation audit found unguarded (each test fails on a one-line breakage no other test noticed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { checkpointIfDue, MISSING_EVENTS, witnessLatest } from '../../src/services/auditlog/checkpointer.ts';
import { checkContinuity, openRollback } from '../../src/services/auditlog/continuity.ts';
import { openWitnessProblem } from '../../src/services/auditlog/checkpointer.ts';
import { startAuditLog } from '../../src/services/auditlog/runner.ts';
import { ensureLogState } from '../../src/services/auditlog/log.ts';
import { sequencePending } from '../../src/services/auditlog/sequencer.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { addEvents, clockedAuditLog, deadWitnessUrl, startAuditService } from './support.ts';

const policy = { intervalMs: 60_000, maxEvents: 10_000 };

/** A server at a witness's URL that answers every submission 200 with a well-formed line under no key the log pins. */
async function junkWitness(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`\u2014 localhost/gavel-witness ${Buffer.alloc(76, 9).toString('base64')}\n`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

for (const backend of backends()) {
  test(`nothing new, nothing signed: no checkpoint of an empty log, none again at the same size, no resubmission of a witnessed one (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      await ensureLogState(ts.store);
      assert.equal(await checkpointIfDue(ts.store, new LocalSigner(join(ts.dataDir, 'keys')), new Date(), policy, true), undefined, 'an empty log signs nothing');
      // A witness outage on record is no rollback.
      await ts.store.db.insertInto('audit_witness_problem').values({ id: 1, kind: 'unavailable', reason: 'down', at: new Date().toISOString() }).execute();
      assert.equal((await openWitnessProblem(ts.store.db))?.kind, 'unavailable');
      assert.equal(await openRollback(ts.store.db), null);
    } finally { await ts.cleanup(); }

    const a = await startAuditService(backend, 'own');
    try {
      await addEvents(a.svc.ts.store, a.svc.projectId, 2);
      const first = await a.svc.auditLog.tick({ force: true });
      assert.equal(first.witness?.kind, 'cosigned');
      const again = await a.svc.auditLog.tick({ force: true });
      assert.equal(again.checkpoint, undefined, 'the same size is not signed twice');
      assert.equal(again.witness?.kind, 'nothing_to_do', 'a witnessed checkpoint is not submitted again');
    } finally { await a.stop(); }
  });

  test(`the continuity check leaves an unwitnessed newest checkpoint to the checkpointer, and trusts only the pinned key (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const junk = await junkWitness();
    const { store } = a.svc.ts;
    const signer = new LocalSigner(join(a.svc.ts.dataDir, 'keys'));
    const witness = { url: a.svc.deps.config.witnessUrl!, vkey: a.svc.deps.config.witnessVkey! };
    try {
      await addEvents(store, a.svc.projectId, 2);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      assert.equal((await checkContinuity(store, signer, witness)).kind, 'ok');
      // A server answering 200 at the witness's URL with a line no pinned key verifies does not say the witness holds it.
      assert.equal((await checkContinuity(store, signer, { ...witness, url: junk.url })).kind, 'invalid_cosignature');
      // A newer checkpoint, signed but not yet submitted: the witness's answer to it is the checkpointer's to read.
      await addEvents(store, a.svc.projectId, 2);
      await sequencePending(store);
      assert.ok(await checkpointIfDue(store, signer, new Date(), policy, true));
      assert.equal((await checkContinuity(store, signer, witness)).kind, 'pending');
      assert.equal((await witnessLatest(store, witness, new Date())).kind, 'cosigned');
    } finally {
      await junk.close();
      await a.stop();
    }
  });

  test(`an event row deleted under a witnessed checkpoint is a rollback until it is back, though every node still stands (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    const signer = new LocalSigner(join(a.svc.ts.dataDir, 'keys'));
    const witness = { url: a.svc.deps.config.witnessUrl!, vkey: a.svc.deps.config.witnessVkey! };
    try {
      await addEvents(store, a.svc.projectId, 5);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      const size = (await ensureLogState(store)).size;
      assert.equal((await checkContinuity(store, signer, witness)).kind, 'ok');
      const victim = await store.db.selectFrom('audit_events').selectAll().where('leaf_index', '=', 2).executeTakeFirstOrThrow();
      await store.db.deleteFrom('audit_events').where('leaf_index', '=', 2).execute();
      // Found by a later check (the sweep), and again by the next: the rollback stays until the row is back.
      for (let i = 0; i < 2; i++) {
        const found = await checkContinuity(store, signer, witness);
        assert.equal(found.kind, 'rolled_back', JSON.stringify(found));
        assert.match((found as { reason: string }).reason, new RegExp(`holds ${size - 1} of the ${size} events with leaf indexes 0 to ${size - 1}`));
      }
      await store.db.insertInto('audit_events').values(victim).execute();
      assert.equal((await checkContinuity(store, signer, witness)).kind, 'ok');
      // Recorded (as the runner records it), such a rollback outlives the witness's next cosignature,
      // which reads no leaf and so says nothing of the rows: only a check that finds them whole clears it.
      const recorded = async (reason: string) => {
        await store.db.deleteFrom('audit_witness_problem').execute();
        await store.db.insertInto('audit_witness_problem').values({ id: 1, kind: 'rolled_back', reason, at: new Date().toISOString() }).execute();
        await addEvents(store, a.svc.projectId, 1);
        assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
        return (await openWitnessProblem(store.db))?.reason;
      };
      const missing = `${MISSING_EVENTS}the log holds 4 of the 5 events with leaf indexes 0 to 4`;
      assert.equal(await recorded(missing), missing);
      assert.equal(await recorded('the witness holds size 90 (a restore from an older copy)'), undefined, 'another rollback a cosignature puts right');
    } finally { await a.stop(); }
  });

  test(`a state row whose root is not the stored tree's is never signed: the checkpointer refuses, and the runner records why (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    const signer = new LocalSigner(join(a.svc.ts.dataDir, 'keys'));
    try {
      await addEvents(store, a.svc.projectId, 3);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      await addEvents(store, a.svc.projectId, 2);
      await sequencePending(store);
      const state = await ensureLogState(store);
      await store.db.updateTable('audit_log_state').set({ root: new Uint8Array(32).fill(7) }).where('id', '=', 1).execute();
      await assert.rejects(checkpointIfDue(store, signer, new Date(), policy, true), (e: Error & { code?: string }) => e.code === 'state_mismatch' && /names size \d+ with a root its stored tree does not have/.test(e.message));
      assert.equal((await store.db.selectFrom('audit_checkpoints').select('size').where('size', '=', state.size).execute()).length, 0, 'nothing signed');
      await store.db.updateTable('audit_log_state').set({ root: state.root }).where('id', '=', 1).execute();
      assert.equal((await checkpointIfDue(store, signer, new Date(), policy, true))?.size, state.size, 'signed once they agree');
    } finally { await a.stop(); }
  });

  test(`an unreachable witness: the check is not recorded and not repeated before 30 s, and a later outage does not replace a rollback (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    const deadUrl = await deadWitnessUrl();
    let clock = Date.now();
    let runner: ReturnType<typeof startAuditLog> | undefined;
    try {
      await addEvents(store, a.svc.projectId, 2);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      await a.svc.close();
      clock = Date.now() + 1_000; // after the cosignature, so that a problem recorded now would show
      runner = clockedAuditLog(a, () => clock, deadUrl);
      await runner.firstTick;
      assert.equal((await runner.tick()).continuity, undefined, 'the first tick asked already');
      assert.equal(await openWitnessProblem(store.db), null, 'an outage the check alone found is not recorded');
      clock += 29_000;
      assert.equal((await runner.tick()).continuity, undefined, 'not asked again within 30 s');
      clock += 1_000;
      assert.equal((await runner.tick()).continuity?.kind, 'unavailable');
      // A rollback on record, then a checkpoint the witness cannot be asked to cosign: the rollback stays what is shown.
      const rollback = { id: 1, kind: 'rolled_back', reason: 'the witness holds a checkpoint of size 99, larger than the log', at: new Date(clock).toISOString() };
      await store.db.insertInto('audit_witness_problem').values(rollback).onConflict((oc) => oc.column('id').doUpdateSet(rollback)).execute();
      await addEvents(store, a.svc.projectId, 1);
      clock += 1_000;
      assert.equal((await runner.tick({ force: true })).witness?.kind, 'unavailable');
      assert.equal((await openRollback(store.db))?.reason, rollback.reason);
    } finally {
      await runner?.stop();
      await a.stop();
    }
  });
}

for (const backend of backends()) {
  test(`a stop cutting the loop's wait on a witness short records no witness problem: the cut says nothing of the witness (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    // A witness that takes submissions and never answers them.
    let asked!: () => void;
    const askedOnce = new Promise<void>((resolve) => { asked = resolve; });
    const held: import('node:http').ServerResponse[] = [];
    const hanging = createServer((_req, res) => { held.push(res); asked(); });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    let runner: ReturnType<typeof startAuditLog> | undefined;
    try {
      await a.svc.close();
      await addEvents(store, a.svc.projectId, 3);
      // Two minutes on: a checkpoint of the new events is due, and is submitted after the check.
      runner = clockedAuditLog(a, () => Date.now() + 120_000, `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`);
      await askedOnce;
      runner.halt();
      await runner.firstTick;
      // The halted tick still signed what it sequenced; only its witness waits were cut.
      assert.ok((await store.db.selectFrom('audit_checkpoints').select('size').where('witnessed_at', 'is', null).execute()).length > 0, 'a checkpoint waits for the witness');
      assert.equal(await openWitnessProblem(store.db), null, 'no outage recorded for a wait the stop cut');
    } finally {
      for (const r of held) r.destroy();
      hanging.close();
      await runner?.stop();
      await a.stop();
    }
  });
}
