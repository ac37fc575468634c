// An instance whose own heartbeats failed (the database was unreachable to it) does not take the
// others for dead when it is back: after an outage every heartbeat is stale, and the first instance
// to reconnect would otherwise mark the calls of all the others, alive and reconnecting, UNKNOWN.
// It judges others only once it has beaten without a break for longer than STALE_AFTER_MS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends } from '../support/backends.ts';
import { otherInstanceInFlight, seedInFlight } from '../support/executions.ts';
import { startService } from '../support/service.ts';
import { HEARTBEAT_MS, InstanceKeeper, STALE_AFTER_MS, sweepInFlight } from '../../src/services/executions/recovery.ts';
import type { Store } from '../../src/store/store.ts';

/** `store` as an instance cut off from the database sees it: every query refused while `down()`. */
function unreachableWhile(store: Store, down: () => boolean): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'db' && down()) throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
      return Reflect.get(target, prop, receiver);
    },
  }) as Store;
}

for (const backend of backends()) {
  test(`after its own heartbeats failed, an instance leaves others' calls alone until it has beaten for a while (${backend.name})`, async () => {
    const svc = await startService(backend);
    let down = true;
    // The keeper's view of the database: unreachable until `down` is cleared.
    const flaky = unreachableWhile(svc.ts.store, () => down);
    const keeper = new InstanceKeeper({ store: flaky, instanceId: 'keeper', maxTimeoutMs: 60_000, now: () => new Date() });
    try {
      down = false;
      await keeper.start();
      down = true;
      // Another instance, alive but as stale as everyone is after an outage, with a call in flight.
      const staleAt = new Date(Date.now() - STALE_AFTER_MS - 5_000).toISOString();
      await svc.ts.store.db.insertInto('execution_instances').values({ id: 'other', started_at: staleAt, heartbeat_at: staleAt }).execute();
      const id = await seedInFlight(svc.ts.store, svc.projectId, 'other');
      await sleep(HEARTBEAT_MS * 1.5); // one failed beat
      down = false;
      await sleep(HEARTBEAT_MS * 2); // a beat or two after the outage, each followed by a sweep
      const row = await svc.ts.store.db.selectFrom('executions').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.status, 'IN_FLIGHT', 'the other instance\'s call is left alone so soon after this one was cut off');
      // The mechanism itself: judged, the same row is the dead instance's.
      await sweepInFlight(svc.ts.store, { instanceId: 'keeper', now: new Date(), maxTimeoutMs: 60_000, startup: false, judgeOthers: false });
      assert.equal((await svc.ts.store.db.selectFrom('executions').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status, 'IN_FLIGHT');
      await sweepInFlight(svc.ts.store, { instanceId: 'keeper', now: new Date(), maxTimeoutMs: 60_000, startup: false });
      assert.equal((await svc.ts.store.db.selectFrom('executions').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status, 'UNKNOWN');
    } finally {
      down = false;
      await keeper.stop();
      await svc.stop();
    }
  });
}

for (const backend of backends()) {
  test(`an instance the keeper watched beat before an outage is left alone by the keeper's first beats after it (${backend.name})`, async () => {
    // A bare store, no service keeper of its own: the outage is everyone's, and 'other' was seen
    // beating before it (a first sighting counts as beating; this one is not a first sighting).
    const ts = await backend.open();
    let down = false;
    const flaky = unreachableWhile(ts.store, () => down);
    const keeper = new InstanceKeeper({ store: flaky, instanceId: 'keeper', maxTimeoutMs: 60_000, now: () => new Date() });
    try {
      await keeper.start();
      const id = await otherInstanceInFlight(ts.store, 'prj_outage');
      await sleep(HEARTBEAT_MS * 1.5); // a sweep sees it beating
      // Longer than STALE_AFTER_MS, for everyone: 'other' cannot beat either.
      down = true;
      await sleep(STALE_AFTER_MS + 3_000);
      down = false;
      await sleep(HEARTBEAT_MS * 2); // a beat or two after it, each followed by a sweep
      const row = await ts.store.db.selectFrom('executions').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.status, 'IN_FLIGHT', 'the keeper has not beaten unbroken for STALE_AFTER_MS since the outage: it judges no one');
    } finally {
      down = false;
      await keeper.stop();
      await ts.cleanup();
    }
  });
}
