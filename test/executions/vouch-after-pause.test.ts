// An instance whose process (or VM) was paused past the staleness window has been taken for dead by
// the others; a call it reserves on waking, before its next beat, would be marked UNKNOWN by their
// next sweep while its merchant answers. Before a reservation it beats first if its last beat is
// older than two heartbeats (InstanceKeeper.vouch, wired into Executions.run).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { seedInFlight } from '../support/executions.ts';
import { startService } from '../support/service.ts';
import { startPayments } from '../support/payments.ts';
import { Executions } from '../../src/services/executions/executions.ts';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Store } from '../../src/store/store.ts';
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
      // A stopped instance retires its row: none is left for the others to judge.
      await keeper.stop();
      assert.equal(await db.selectFrom('execution_instances').select('id').where('id', '=', 'paused').executeTakeFirst(), undefined);
    } finally {
      await keeper.stop();
      await svc.stop();
    }
  });
}

for (const backend of backends()) {
  test(`every new call is vouched for before its reservation; a replay reserves nothing and is not (${backend.name})`, async () => {
    const p = await startPayments(backend, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 10_000, currency: 'EUR' } }, { timeoutMs: 5_000 });
    const { deps } = p.svc;
    const nonce = randomUUID();
    const reservedWhenVouched: boolean[] = [];
    const configured = deps.executions;
    (deps as { executions: unknown }).executions = new Executions({ store: p.svc.ts.store, writer: deps.writer, merchants: deps.merchants, instanceId: configured.instanceId, now: () => new Date(),
      vouch: async () => { reservedWhenVouched.push((await p.svc.ts.store.db.selectFrom('executions').select('id').where('nonce', '=', nonce).executeTakeFirst()) !== undefined); } });
    const pay = () => p.svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: p.key,
      payload: { agent: p.agent.did, permit: p.permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' },
        execution: { merchant: 'shop', operation: 'ok', payload: {}, nonce } } });
    try {
      assert.equal((await pay()).json().decision, 'ALLOW');
      assert.equal((await pay()).json().decision, 'REPLAY');
      assert.deepEqual(reservedWhenVouched, [false]);
    } finally {
      (deps as { executions: unknown }).executions = configured;
      await p.stop();
    }
  });
}

for (const backend of backends()) {
  test(`after a failed beat an instance beats before it reserves, however recent its last good beat (${backend.name})`, async () => {
    const svc = await startService(backend);
    let down = false;
    let failures = 0;
    // The keeper's view of the database: unreachable while `down` is set.
    const flaky = new Proxy(svc.ts.store, {
      get(target, prop, receiver) {
        if (prop === 'db' && down) { failures++; throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' }); }
        return Reflect.get(target, prop, receiver);
      },
    }) as Store;
    const keeper = new InstanceKeeper({ store: flaky, instanceId: 'cut', maxTimeoutMs: 60_000, now: () => new Date() });
    const db = svc.ts.store.db;
    const stale = new Date(Date.now() - STALE_AFTER_MS - 5_000).toISOString();
    try {
      await keeper.start();
      down = true;
      while (failures === 0) await sleep(50); // a beat failed
      await sleep(50);
      await db.updateTable('execution_instances').set({ heartbeat_at: stale }).where('id', '=', 'cut').execute();
      down = false;
      await keeper.vouch();
      assert.notEqual((await db.selectFrom('execution_instances').select('heartbeat_at').where('id', '=', 'cut').executeTakeFirstOrThrow()).heartbeat_at, stale);
    } finally {
      down = false;
      await keeper.stop();
      await svc.stop();
    }
  });
}

/**
 * The store as the keeper sees it: while held, its upserts into execution_instances wait before they
 * run (a beat begun before stop() can be made to land after it), and `retired` settles once a
 * delete from that table has run since.
 */
function watchedInstances(store: Store): { store: Store; hold(): { reached: Promise<void>; retired: Promise<void>; release(): void } } {
  let gate: { reach(): void; opened: Promise<void> } | undefined;
  let retire = () => {};
  // Every builder of the chain is wrapped, so the `execute` at its end can be watched.
  const wrap = <T extends object>(builder: T, around: (run: () => Promise<unknown>) => Promise<unknown>): T => new Proxy(builder, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (typeof value !== 'function') return value;
      const fn = value as (...a: unknown[]) => unknown;
      if (prop === 'execute') return (...args: unknown[]) => around(async () => fn.apply(target, args));
      return (...args: unknown[]) => { const out = fn.apply(target, args); return typeof out === 'object' && out !== null ? wrap(out, around) : out; };
    },
  });
  const beat = async (run: () => Promise<unknown>) => { if (gate) { gate.reach(); await gate.opened; } return run(); };
  const remove = async (run: () => Promise<unknown>) => { const done = await run(); retire(); return done; };
  const db = new Proxy(store.db, {
    get(target, prop) {
      if (prop === 'insertInto') return (table: 'execution_instances') => (table === 'execution_instances' ? wrap(target.insertInto(table), beat) : target.insertInto(table));
      if (prop === 'deleteFrom') return (table: 'execution_instances') => (table === 'execution_instances' ? wrap(target.deleteFrom(table), remove) : target.deleteFrom(table));
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    store: new Proxy(store, { get: (target, prop, receiver) => (prop === 'db' ? db : Reflect.get(target, prop, receiver)) }),
    hold() {
      let reach!: () => void;
      let open!: () => void;
      const reached = new Promise<void>((resolve) => { reach = resolve; });
      const retired = new Promise<void>((resolve) => { retire = resolve; });
      gate = { reach, opened: new Promise<void>((resolve) => { open = resolve; }) };
      return { reached, retired, release: () => { gate = undefined; open(); } };
    },
  };
}

for (const backend of backends()) {
  test(`a beat vouch() began before stop() lands before the row is retired, not after it (${backend.name})`, async () => {
    const svc = await startService(backend);
    const watched = watchedInstances(svc.ts.store);
    const keeper = new InstanceKeeper({ store: watched.store, instanceId: 'stopping', maxTimeoutMs: 60_000, now: () => new Date() });
    const row = () => svc.ts.store.db.selectFrom('execution_instances').select('id').where('id', '=', 'stopping').executeTakeFirst();
    try {
      await keeper.start();
      const held = watched.hold();
      // Woken after a pause by its own clock: it beats before reserving, and the beat is held.
      const vouched = keeper.vouch(performance.now() + STALE_AFTER_MS + 5_000);
      await held.reached;
      const stopped = keeper.stop();
      // A stop that does not wait for the beat retires the row now; one that does waits for ever
      // unless the beat goes on, so it goes on once the row is retired or after a while, whichever
      // comes first (the order of the two writes, not the wait, is what is checked).
      await Promise.race([held.retired, sleep(1_000)]);
      held.release();
      await Promise.all([vouched, stopped]);
      assert.equal(await row(), undefined, 'the stopped instance left a heartbeat row behind');
    } finally {
      await keeper.stop();
      await svc.stop();
    }
  });
}

for (const backend of backends()) {
  test(`a call is sent only while the newest beat began less than half the staleness window ago, on PostgreSQL; on SQLite always (${backend.name})`, async () => {
    const svc = await startService(backend);
    const keeper = new InstanceKeeper({ store: svc.ts.store, instanceId: 'sender', maxTimeoutMs: 60_000, now: () => new Date() });
    try {
      await keeper.start();
      assert.equal(keeper.fresh(), true, 'just beaten');
      // Another instance takes this one for dead no sooner than STALE_AFTER_MS after its newest beat
      // began; a call sent later than half of that, by this instance's own clock, may follow the mark.
      const late = performance.now() + STALE_AFTER_MS / 2 + 1;
      assert.equal(keeper.fresh(late), backend.name !== 'postgres');
      // A beat on waking (vouch) makes it fresh again.
      await keeper.vouch(performance.now() + STALE_AFTER_MS + 5_000);
      assert.equal(keeper.fresh(), true);
    } finally {
      await keeper.stop();
      await svc.stop();
    }
    // A keeper never started (no heartbeat of its own) judges nothing.
    assert.equal(new InstanceKeeper({ store: svc.ts.store, instanceId: 'never', maxTimeoutMs: 60_000, now: () => new Date() }).fresh(), true);
  });
}
