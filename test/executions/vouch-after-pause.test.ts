// An instance whose process (or VM) was paused past the staleness window has been taken for dead by
// the others; a call it reserves on waking, before its next beat, would be marked UNKNOWN by their
// next sweep while its merchant answers. Before a reservation it beats first if its last beat is
// older than two heartbeats (InstanceKeeper.vouch, wired into Executions.run).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { seedInFlight } from '../support/executions.ts';
import { startService } from '../support/service.ts';
import { HEARTBEAT_MS, InstanceKeeper, STALE_AFTER_MS, sweepInFlight } from '../../src/services/executions/recovery.ts';

for (const backend of backends()) {
  test(`a paused instance beats before it reserves, so another's sweep leaves its new call alone (${backend.name})`, async () => {
    const svc = await startService(backend);
    const keeper = new InstanceKeeper({ store: svc.ts.store, instanceId: 'paused', maxTimeoutMs: 60_000, now: () => new Date() });
    const db = svc.ts.store.db;
    const heartbeat = async () => (await db.selectFrom('execution_instances').select('heartbeat_at').where('id', '=', 'paused').executeTakeFirstOrThrow()).heartbeat_at;
    const stale = new Date(Date.now() - STALE_AFTER_MS - 5_000).toISOString();
    try {
      await keeper.start();
      // Its heartbeat as the others see it after a pause.
      await db.updateTable('execution_instances').set({ heartbeat_at: stale }).where('id', '=', 'paused').execute();
      // Not paused by its own clock: no beat is spent on a reservation.
      await keeper.vouch();
      assert.equal(await heartbeat(), stale);
      // Woken after the pause, by its own clock: it beats before reserving.
      await keeper.vouch(performance.now() + STALE_AFTER_MS + 5_000);
      assert.ok(Date.parse(await heartbeat()) > Date.now() - 2 * HEARTBEAT_MS, 'the heartbeat is fresh again');
      const id = await seedInFlight(svc.ts.store, svc.projectId, 'paused');
      // Another instance's sweep, judging others: the call's instance is alive.
      await sweepInFlight(svc.ts.store, { instanceId: 'other', now: new Date(), maxTimeoutMs: 60_000, startup: false });
      assert.equal((await db.selectFrom('executions').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status, 'IN_FLIGHT');
    } finally {
      await keeper.stop();
      await svc.stop();
    }
  });
}
