// An outage in which the database does not refuse but hangs (a partition, a paused host) makes each
// heartbeat wait before it fails, longer than HEARTBEAT_MS. The keeper must not count beats queued
// behind a hung one as time beaten without a break: when the database answers again, a backlog of
// beats runs at once, and the instance would judge the others, as stale as it after the outage,
// dead within milliseconds instead of after STALE_AFTER_MS. A hang that ends in an answer is the
// same: the beat that waited through it comes late, and a late beat breaks the run as a failed one does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KyselyPlugin } from 'kysely';
import { backends } from '../support/backends.ts';
import { otherInstanceInFlight, seedInFlight } from '../support/executions.ts';
import { newId } from '../../src/lib/ids.ts';
import { HEARTBEAT_MS, InstanceKeeper, STALE_AFTER_MS } from '../../src/services/executions/recovery.ts';
import type { Store } from '../../src/store/store.ts';

const backend = backends()[0]!;
for (const ending of ['fails', 'answers'] as const) test(`after a hung outage whose beat then ${ending}, an instance leaves others' calls alone for a staleness window (${backend.name})`, { timeout: 60_000 }, async () => {
  // A store with no service on it: a service's own keeper, beating unbroken, would judge the other instance itself.
  const ts = await backend.open();
  const projectId = newId('prj');
  await ts.store.db.insertInto('projects').values({ id: projectId, name: 'p', created_at: new Date().toISOString() }).execute();
  const svc = { ts, projectId, stop: () => ts.cleanup() };
  let hanging = false;
  let answer: () => void = () => {};
  let back = Promise.resolve();
  // While hanging, every query of the keeper waits until the database answers again, then fails
  // (as a query on a partitioned connection does once it is noticed), or gets its answer (a paused host).
  const plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      if (hanging) {
        await back;
        if (ending === 'fails') throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
      }
      return args.result;
    },
  };
  const db = svc.ts.store.db.withPlugin(plugin);
  const flaky = new Proxy(svc.ts.store, { get: (target, prop, receiver) => (prop === 'db' ? db : Reflect.get(target, prop, receiver)) }) as Store;
  const keeper = new InstanceKeeper({ store: flaky, instanceId: 'keeper', maxTimeoutMs: 60_000, now: () => new Date() });
  try {
    await keeper.start();
    back = new Promise<void>((resolve) => { answer = resolve; });
    hanging = true;
    const staleAt = new Date(Date.now() - STALE_AFTER_MS - 5_000).toISOString();
    await svc.ts.store.db.insertInto('execution_instances').values({ id: 'other', started_at: staleAt, heartbeat_at: staleAt }).execute();
    const id = await seedInFlight(svc.ts.store, svc.projectId, 'other');
    // A hang of eight heartbeats: the first beat waits through it, the next ones queue up behind it.
    await sleep(HEARTBEAT_MS * 8);
    hanging = false;
    answer();
    await sleep(HEARTBEAT_MS * 1.5);
    const row = await svc.ts.store.db.selectFrom('executions').select('status').where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.status, 'IN_FLIGHT', 'the other instance\'s call is left alone so soon after the database answered again');
  } finally {
    hanging = false;
    answer();
    await keeper.stop();
    await svc.stop();
  }
});

for (const backend of backends()) {
  test(`a keeper whose ticks were held up past STALE_AFTER_MS takes its first late beat as a break: an instance it watched before is left alone (${backend.name})`, async () => {
    const ts = await backend.open();
    const keeper = new InstanceKeeper({ store: ts.store, instanceId: 'keeper', maxTimeoutMs: 60_000, now: () => new Date() });
    try {
      await keeper.start();
      const id = await otherInstanceInFlight(ts.store, 'prj_late');
      await sleep(HEARTBEAT_MS * 1.5); // a sweep sees it beating
      // This thread blocked longer than STALE_AFTER_MS (a host paused, a database hung for everyone):
      // its next beat comes late, and 'other' could not beat meanwhile either.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, STALE_AFTER_MS + 3_000);
      await sleep(HEARTBEAT_MS * 2);
      const row = await ts.store.db.selectFrom('executions').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.status, 'IN_FLIGHT', 'a late beat starts the unbroken run afresh: no one is judged so soon after');
    } finally {
      await keeper.stop();
      await ts.cleanup();
    }
  });
}
