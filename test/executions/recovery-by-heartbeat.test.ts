// The keeper's own sweeps, end to end: a running instance that has beaten without a break for longer
// than STALE_AFTER_MS takes an instance whose heartbeat went stale for dead, marks its calls in flight
// UNKNOWN, and tells the service (which logs that a person must resolve them). Other tests call
// sweepInFlight directly; this one lets the keeper's timer do it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends } from '../support/backends.ts';
import { seedInFlight } from '../support/executions.ts';
import { newId } from '../../src/lib/ids.ts';
import { HEARTBEAT_MS, InstanceKeeper, STALE_AFTER_MS, STOPPED_NOTE } from '../../src/services/executions/recovery.ts';

for (const backend of backends()) {
  test(`a running instance marks a dead one's calls UNKNOWN once it has beaten unbroken past the staleness window, and says so (${backend.name})`, { timeout: 120_000 }, async () => {
    // A store with no service on it, so that only this keeper judges.
    const ts = await backend.open();
    const projectId = newId('prj');
    await ts.store.db.insertInto('projects').values({ id: projectId, name: 'p', created_at: new Date().toISOString() }).execute();
    const told: number[] = [];
    const keeper = new InstanceKeeper({ store: ts.store, instanceId: 'keeper', maxTimeoutMs: 60_000, now: () => new Date(), onMarked: (n) => told.push(n) });
    try {
      await keeper.start();
      // Seeded after start: on SQLite the start itself takes every other instance for dead.
      const staleAt = new Date(Date.now() - STALE_AFTER_MS - 5_000).toISOString();
      await ts.store.db.insertInto('execution_instances').values({ id: 'dead', started_at: staleAt, heartbeat_at: staleAt }).execute();
      const id = await seedInFlight(ts.store, projectId, 'dead');
      const row = () => ts.store.db.selectFrom('executions').select(['status', 'note']).where('id', '=', id).executeTakeFirstOrThrow();
      // Wait for it: the first judgement comes one staleness window after start (docs/executions.md, ~12 s).
      // The row reads UNKNOWN as soon as the sweep marks it; the service is told once that sweep has
      // ended (after its cleanup of dead instances): wait for both, or told was read in between.
      // The wait is counted in the keeper's unbroken beats, read from its heartbeat: a beat that came
      // late (a stalled machine) restarts the keeper's window, so it restarts the count too (at a
      // smaller gap than the keeper's, erring towards waiting longer), rather than failing the test.
      const beatAt = async () => Date.parse((await ts.store.db.selectFrom('execution_instances').select('heartbeat_at').where('id', '=', 'keeper').executeTakeFirstOrThrow()).heartbeat_at);
      let lastBeat = await beatAt();
      let unbrokenBeats = 0;
      while ((await row()).status === 'IN_FLIGHT' || told.length === 0) {
        assert.ok(unbrokenBeats <= STALE_AFTER_MS / HEARTBEAT_MS + 3, `the keeper beat unbroken ${unbrokenBeats} times, past the staleness window, and marked nothing`);
        await sleep(HEARTBEAT_MS / 4);
        const at = await beatAt();
        if (at !== lastBeat) unbrokenBeats = at - lastBeat > 1.5 * HEARTBEAT_MS ? 0 : unbrokenBeats + 1;
        lastBeat = at;
      }
      assert.deepEqual(await row(), { status: 'UNKNOWN', note: STOPPED_NOTE });
      assert.deepEqual(told, [1], 'the service is told how many calls now wait for a person');
    } finally {
      await keeper.stop();
      await ts.cleanup();
    }
  });
}
