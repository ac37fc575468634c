// The wall clock stepped back (an NTP correction, a VM restored from a snapshot) while the audit
// log runs. Its schedules are judged by elapsed wall time since a stored or remembered instant; an
// instant now in the future means no time can be measured, and the work is due rather than put off
// until the clock catches up (an hour's step: an hour without a checkpoint or a rollback check).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { checkpointIfDue, openWitnessProblem, witnessLatest } from '../../src/services/auditlog/checkpointer.ts';
import { openRollback } from '../../src/services/auditlog/continuity.ts';
import { CONTINUITY_CHECK_MS } from '../../src/services/auditlog/runner.ts';
import { sequencePending } from '../../src/services/auditlog/sequencer.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { addEvents, clockedAuditLog, deadWitnessUrl, restoreUnderLeader, startAuditService } from './support.ts';

const HOUR = 3_600_000;
const policy = { intervalMs: 60_000, maxEvents: 10_000 };

for (const backend of backends()) {
  test(`a checkpoint is due when the clock has stepped back behind the last one (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    const { store } = a.svc.ts;
    const signer = new LocalSigner(join(a.svc.ts.dataDir, 'keys'));
    try {
      await a.svc.close();
      const t = Date.now();
      await addEvents(store, a.svc.projectId, 2);
      await sequencePending(store);
      assert.ok(await checkpointIfDue(store, signer, new Date(t), policy, true));
      await addEvents(store, a.svc.projectId, 2);
      await sequencePending(store);
      assert.equal(await checkpointIfDue(store, signer, new Date(t + 1_000), policy), undefined, 'a second after the last: not due');
      // Stepped back an hour: until the clock passed the last checkpoint again, new events had no checkpoint to prove them.
      const cp = await checkpointIfDue(store, signer, new Date(t - HOUR), policy);
      assert.ok(cp, 'due: the time since the last checkpoint cannot be told');
      assert.equal(await checkpointIfDue(store, signer, new Date(t - HOUR + 1_000), policy), undefined, 'and then judged from the new one');
    } finally { await a.stop(); }
  });

  test(`the leader's continuity check is not put off by a clock that stepped back (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    let clock = Date.now();
    const runner = clockedAuditLog(a, () => clock);
    try {
      await restoreUnderLeader(a, runner);
      clock -= HOUR;
      assert.equal((await runner.tick()).continuity, undefined, 'not asked again within the minute');
      clock += CONTINUITY_CHECK_MS;
      assert.equal((await runner.tick()).continuity?.kind, 'rolled_back', 'a minute later by the stepped clock, asked');
      // Recorded at the stepped-back time, earlier than the last cosignature: it is open all the same.
      assert.match((await openRollback(store.db))?.reason ?? '', /larger than the log/);
    } finally {
      await runner.stop();
      await a.stop();
    }
  });

  test(`a witness outage goes on being recorded once a minute after the clock stepped back (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    let clock = Date.now();
    const runner = clockedAuditLog(a, () => clock, await deadWitnessUrl());
    try {
      await a.svc.close();
      await runner.firstTick;
      await addEvents(store, a.svc.projectId, 1);
      assert.equal((await runner.tick({ force: true })).witness?.kind, 'unavailable');
      assert.equal((await openWitnessProblem(store.db))?.at, new Date(clock).toISOString());
      clock -= HOUR;
      await runner.tick();
      assert.equal((await openWitnessProblem(store.db))?.at, new Date(clock).toISOString(), 'seen again now, not an hour from now');
    } finally {
      await runner.stop();
      await a.stop();
    }
  });

  test(`a cosignature puts a witness problem right even when it is stamped before it (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    const witness = { url: a.svc.deps.config.witnessUrl!, vkey: a.svc.deps.config.witnessVkey! };
    const signer = new LocalSigner(join(a.svc.ts.dataDir, 'keys'));
    try {
      await a.svc.close();
      const t = Date.now();
      await store.db.insertInto('audit_witness_problem').values({ id: 1, kind: 'unavailable', reason: 'the witness could not be reached', at: new Date(t).toISOString() }).execute();
      assert.equal((await openWitnessProblem(store.db))?.kind, 'unavailable');
      // The witness is back, and the clock has stepped back an hour.
      await addEvents(store, a.svc.projectId, 2);
      await sequencePending(store);
      assert.ok(await checkpointIfDue(store, signer, new Date(t - HOUR), policy, true));
      assert.equal((await witnessLatest(store, witness, new Date(t - HOUR))).kind, 'cosigned');
      assert.equal(await openWitnessProblem(store.db), null, 'the outage is over');
    } finally { await a.stop(); }
  });
}
