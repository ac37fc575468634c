// PostgreSQL: heartbeats are written and judged by the database's clock (recovery.ts). When that
// clock steps forward (an NTP correction, the database's VM resumed), every heartbeat written before
// the step looks stale at once, and a sweep that ran before the other instances' next beat took them
// all for dead and marked their calls in flight UNKNOWN. A keeper now also needs to have watched a
// heartbeat stay unchanged for STALE_AFTER_MS before it takes its instance for dead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { seedInFlight } from '../support/executions.ts';
import { startService } from '../support/service.ts';
import { beat, STALE_AFTER_MS, STOPPED_NOTE } from '../../src/services/executions/recovery.ts';

for (const backend of backends().filter((b) => b.name === 'postgres')) {
  test('a heartbeat the keeper saw change is alive, though the database clock says it is an hour old (postgres)', async () => {
    const svc = await startService(backend);
    const { db } = svc.ts.store;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const status = async (id: string) => (await db.selectFrom('executions').select(['status', 'note']).where('id', '=', id).executeTakeFirstOrThrow());
    const heartbeat = async () => (await db.selectFrom('execution_instances').select('heartbeat_at').where('id', '=', svc.deps.executions.instanceId).executeTakeFirstOrThrow()).heartbeat_at;
    /** Resolves once the service's keeper has run a whole tick (beat, then sweep) begun after this call. */
    const wholeTick = async () => {
      let seen = await heartbeat();
      for (let beats = 0; beats < 2; beats++) {
        const from = seen;
        while ((seen = await heartbeat()) === from) await sleep(100);
      }
    };
    const hourAgo = async () => (await sql<{ at: string }>`select to_char((clock_timestamp() - interval '1 hour') at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at`.execute(db)).rows[0]!.at;
    try {
      // "dead" beat once, an hour ago by the database's clock, and never again; "alive" beats on.
      const stale = await hourAgo();
      await db.insertInto('execution_instances').values({ id: 'dead', started_at: stale, heartbeat_at: stale }).execute();
      await beat(svc.ts.store, 'alive', new Date());
      const deadCall = await seedInFlight(svc.ts.store, svc.projectId, 'dead');
      const liveCall = await seedInFlight(svc.ts.store, svc.projectId, 'alive');
      // Once the keeper judges (it has watched "dead" unchanged for STALE_AFTER_MS), the dead instance's call is UNKNOWN.
      for (let i = 0; (await status(deadCall)).status === 'IN_FLIGHT'; i++) {
        assert.ok(i < (STALE_AFTER_MS / 250) * 4, 'the keeper judges the dead instance');
        await beat(svc.ts.store, 'alive', new Date());
        await sleep(250);
      }
      assert.deepEqual(await status(deadCall), { status: 'UNKNOWN', note: STOPPED_NOTE });
      // The database's clock steps an hour forward just after "alive" beats: its heartbeat is an hour old now.
      await db.updateTable('execution_instances').set({ heartbeat_at: await hourAgo() }).where('id', '=', 'alive').execute();
      await wholeTick();
      assert.deepEqual(await status(liveCall), { status: 'IN_FLIGHT', note: null }, 'the live instance\'s call is left alone');
    } finally {
      await db.updateTable('executions').set({ status: 'FAILED' }).where('status', '=', 'IN_FLIGHT').execute();
      await svc.stop();
    }
  });
}
