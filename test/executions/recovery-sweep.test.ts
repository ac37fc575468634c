// What a recovery sweep marks UNKNOWN, and what it leaves alone (docs/executions.md "Recovery"),
// checked where a mutation audit (session 33) found nothing pinned: rows older than the longest
// timeout plus the margin, whoever owns them; an outcome recorded while the sweep runs; a live
// instance's call judged by another instance; and what the caller of a call recovery settled first is told.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { seedInFlight } from '../support/executions.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent, type Agent } from '../support/authorize.ts';
import { merchantsFile, startMerchant, type TestMerchant } from '../support/merchant.ts';
import { stopBoth } from '../support/payments.ts';
import { AGE_MARGIN_MS, beat, retire, STOPPED_NOTE, sweepInFlight, TOO_OLD_NOTE } from '../../src/services/executions/recovery.ts';
import { recordOutcome } from '../../src/services/executions/executions.ts';
import { MAX_TIMEOUT_MS as CEILING_MS } from '../../src/merchants/config.ts';
import type { Store } from '../../src/store/store.ts';

for (const backend of backends()) {
  describe(`recovery sweeps on ${backend.name}`, () => {
    let svc: TestService;
    let merchant: TestMerchant;
    let key: { authorization: string };
    let agent: Agent;
    let permit: string;
    const MAX_TIMEOUT_MS = 2_000;
    const status = async (id: string) => (await svc.ts.store.db.selectFrom('executions').select(['status', 'note']).where('id', '=', id).executeTakeFirstOrThrow());
    const unknownEvents = async (id: string) => (await svc.ts.store.db.selectFrom('audit_events').select('data').where('kind', '=', 'execution.unknown').execute())
      .filter((e) => JSON.parse(e.data).execution_id === id);
    const authorize = (nonce: string, operation: string) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: {
      agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' },
      execution: { merchant: 'shop', operation, payload: { order: 'o-1' }, nonce },
    } });

    before(async () => {
      merchant = await startMerchant();
      svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url, MAX_TIMEOUT_MS) });
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      agent = newAgent();
      permit = (await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] })).jws;
    });
    after(() => stopBoth(svc, merchant));

    test('a live instance\'s row older than the longest timeout plus the margin is UNKNOWN, audited; a younger one is left in flight', async () => {
      const now = new Date();
      // The sweeper owns both rows and is alive (it beats), so only age can make one UNKNOWN. It beats
      // before it owns them: a row of an instance with no heartbeat is a dead one's, and the service's
      // own keeper, once it judges others, marked it (with the note of a stopped process) meanwhile.
      await beat(svc.ts.store, 'sweeper', now);
      const aged = async (ageMs: number) => {
        const id = await seedInFlight(svc.ts.store, svc.projectId, 'sweeper');
        await svc.ts.store.db.updateTable('executions').set({ created_at: new Date(now.getTime() - ageMs).toISOString() }).where('id', '=', id).execute();
        return id;
      };
      const old = await aged(MAX_TIMEOUT_MS + AGE_MARGIN_MS + 1_000);
      const young = await aged(MAX_TIMEOUT_MS + AGE_MARGIN_MS - 1_000);
      try {
        assert.equal(await sweepInFlight(svc.ts.store, { instanceId: 'sweeper', now, maxTimeoutMs: MAX_TIMEOUT_MS, startup: false }), 1);
        assert.deepEqual(await status(old), { status: 'UNKNOWN', note: TOO_OLD_NOTE });
        assert.deepEqual(await status(young), { status: 'IN_FLIGHT', note: null });
      } finally { await retire(svc.ts.store, 'sweeper'); }
      assert.equal((await unknownEvents(old)).length, 1);
      await svc.ts.store.db.updateTable('executions').set({ status: 'FAILED' }).where('id', '=', young).execute(); // out of the way of the service's own sweeps
    });

    test('a live instance\'s row is too old by its owner\'s longest timeout, not the sweeper\'s; an owner that states none, by the ceiling', async () => {
      // Instances sharing a database may hold different merchants files (one without merchants, one
      // with a 2-minute merchant added): a sweeper judging by its own 2 s marked the other's call UNKNOWN
      // while its merchant still had a minute and more to answer.
      const now = new Date();
      await beat(svc.ts.store, 'patient', now, CEILING_MS);
      await svc.ts.store.db.insertInto('execution_instances').values({ id: 'unstated', started_at: now.toISOString(), heartbeat_at: now.toISOString() }).execute();
      const aged = async (owner: string, ageMs: number) => {
        const id = await seedInFlight(svc.ts.store, svc.projectId, owner);
        await svc.ts.store.db.updateTable('executions').set({ created_at: new Date(now.getTime() - ageMs).toISOString() }).where('id', '=', id).execute();
        return id;
      };
      const waiting = await aged('patient', MAX_TIMEOUT_MS + AGE_MARGIN_MS + 1_000);
      const unstated = await aged('unstated', MAX_TIMEOUT_MS + AGE_MARGIN_MS + 1_000);
      const abandoned = await aged('patient', CEILING_MS + AGE_MARGIN_MS + 1_000);
      try {
        assert.equal(await sweepInFlight(svc.ts.store, { instanceId: 'sweeper', now, maxTimeoutMs: MAX_TIMEOUT_MS, startup: false }), 1);
        assert.deepEqual(await status(waiting), { status: 'IN_FLIGHT', note: null }, 'within its owner\'s timeout');
        assert.deepEqual(await status(unstated), { status: 'IN_FLIGHT', note: null }, 'an owner\'s timeout unknown: no merchant may have a longer one than the ceiling');
        assert.deepEqual(await status(abandoned), { status: 'UNKNOWN', note: TOO_OLD_NOTE });
      } finally {
        await retire(svc.ts.store, 'patient');
        await retire(svc.ts.store, 'unstated');
        await svc.ts.store.db.updateTable('executions').set({ status: 'FAILED' }).where('id', 'in', [waiting, unstated]).execute(); // out of the way of the service's own sweeps
      }
    });

    test('an outcome recorded while a sweep runs stands: the sweep marks nothing and audits nothing', async () => {
      // An instance whose heartbeat stopped a minute ago: dead to a sweep. Not one with no heartbeat
      // at all, whose row the service's own keeper, once it judges others, could mark before this sweep
      // runs; a heartbeat it has just come upon it watches for STALE_AFTER_MS first.
      const stale = new Date(Date.now() - 60_000).toISOString();
      await svc.ts.store.db.insertInto('execution_instances').values({ id: 'stopped', started_at: stale, heartbeat_at: stale }).execute();
      const id = await seedInFlight(svc.ts.store, svc.projectId, 'stopped');
      const outcome = { status: 'SUCCEEDED' as const, note: 'merchant answered 200', httpStatus: 200 };
      // The owner records its outcome after the sweep read the row in flight, before the sweep writes.
      const racing = new Proxy(svc.ts.store, {
        get(target, prop, receiver) {
          if (prop === 'transaction') {
            return async (fn: Parameters<Store['transaction']>[0]) => {
              await target.transaction((trx) => recordOutcome(trx, { projectId: svc.projectId, id, outcome, at: new Date() }, { dialect: target.dialect, raw: target.raw }));
              return target.transaction(fn);
            };
          }
          return Reflect.get(target, prop, receiver);
        },
      }) as Store;
      assert.equal(await sweepInFlight(racing, { instanceId: 'sweeper', now: new Date(), maxTimeoutMs: MAX_TIMEOUT_MS, startup: false }), 0);
      assert.deepEqual(await status(id), { status: 'SUCCEEDED', note: 'merchant answered 200' });
      assert.deepEqual(await unknownEvents(id), []);
    });

    test('a call in flight belongs to the instance making it: another live instance\'s sweep leaves it alone', async () => {
      const nonce = randomUUID();
      const answer = authorize(nonce, 'hold');
      await merchant.waitForCalls(merchant.totalCalls() + 1);
      const row = await svc.ts.store.db.selectFrom('executions').select('id').where('nonce', '=', nonce).executeTakeFirstOrThrow();
      // A second instance, judging others (its heartbeat run is long enough), sees this one beating.
      await sweepInFlight(svc.ts.store, { instanceId: 'another', now: new Date(), maxTimeoutMs: MAX_TIMEOUT_MS, startup: false });
      assert.deepEqual(await status(row.id), { status: 'IN_FLIGHT', note: null });
      merchant.release();
      assert.equal((await answer).json().execution.status, 'SUCCEEDED');
      // The same sweep does mark a dead instance's call, and forgets a dead instance with nothing in flight.
      const orphan = await seedInFlight(svc.ts.store, svc.projectId, 'gone');
      const stale = new Date(Date.now() - 60_000).toISOString();
      await svc.ts.store.db.insertInto('execution_instances').values({ id: 'departed', started_at: stale, heartbeat_at: stale }).execute();
      await sweepInFlight(svc.ts.store, { instanceId: 'another', now: new Date(), maxTimeoutMs: MAX_TIMEOUT_MS, startup: false });
      assert.deepEqual(await status(orphan), { status: 'UNKNOWN', note: STOPPED_NOTE });
      assert.deepEqual(await svc.ts.store.db.selectFrom('execution_instances').select('id').where('id', '=', 'departed').execute(), []);
    });

    test('an answer that comes after recovery marked the call UNKNOWN: the caller is told UNKNOWN, as recorded, and the answer is kept as a late outcome', async () => {
      const nonce = randomUUID();
      const answer = authorize(nonce, 'hold');
      await merchant.waitForCalls(merchant.totalCalls() + 1);
      // The row looks abandoned to a sweep (older than any timeout allows): recovery marks it UNKNOWN.
      const marked = await sweepInFlight(svc.ts.store, { instanceId: svc.deps.executions.instanceId, now: new Date(Date.now() + 3_600_000), maxTimeoutMs: MAX_TIMEOUT_MS, startup: false });
      assert.equal(marked, 1);
      merchant.release();
      const res = (await answer).json();
      assert.equal(res.decision, 'ALLOW', JSON.stringify(res));
      assert.equal(res.execution.status, 'UNKNOWN', 'the caller is told what stands, not the late answer');
      const row = await svc.ts.store.db.selectFrom('executions').select(['status', 'note']).where('id', '=', res.execution.id).executeTakeFirstOrThrow();
      assert.deepEqual(row, { status: 'UNKNOWN', note: TOO_OLD_NOTE });
      const late = await svc.ts.store.db.selectFrom('audit_events').select('data').where('kind', '=', 'execution.late_outcome').where('data', 'like', `%${res.execution.id}%`).execute();
      assert.equal(late.length, 1);
      assert.equal(JSON.parse(late[0]!.data).status, 'SUCCEEDED');
      const replay = (await authorize(nonce, 'hold')).json();
      assert.deepEqual([replay.decision, replay.execution], ['REPLAY', res.execution]);
    });
  });
}
