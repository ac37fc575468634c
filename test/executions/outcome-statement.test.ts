// An execution's outcome in one statement (executions.ts, recordOutcomeInOneStatement): on
// PostgreSQL the row and its audit event commit together, and a row no longer in flight is left to
// the transaction (which records a late outcome); on SQLite the transaction always records it.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { seedInFlight } from '../support/executions.ts';
import { startService, type TestService } from '../support/service.ts';
import { recordOutcome, recordOutcomeInOneStatement } from '../../src/services/executions/executions.ts';
import type { SqlTarget } from '../../src/store/fixed-sql.ts';
import { STOPPED_NOTE } from '../../src/services/executions/recovery.ts';

for (const backend of backends()) {
  describe(`an execution's outcome in one statement on ${backend.name}`, () => {
    let svc: TestService;
    before(async () => { svc = await startService(backend); });
    after(async () => { await svc.stop(); });

    const env = (): SqlTarget => ({ dialect: svc.ts.store.dialect, raw: svc.ts.store.raw });
    /**
     * An execution row as a decision of this service reserves it: in flight, no outcome, owned by the
     * service's own instance. Owned by none that beats, it was the service's keeper's to mark UNKNOWN
     * (a dead instance's) before the outcome came, once the service had been up long enough to judge others.
     */
    const inFlight = () => seedInFlight(svc.ts.store, svc.projectId, svc.deps.executions.instanceId);
    const events = (id: string) => svc.ts.store.db.selectFrom('audit_events').select(['kind', 'data']).where('kind', 'like', 'execution.%').execute()
      .then((rows) => rows.filter((r) => JSON.parse(r.data).execution_id === id));
    const outcome = { status: 'SUCCEEDED' as const, note: 'merchant answered 200', httpStatus: 200 };

    test('the outcome and its audit event are written together, once', async () => {
      const id = await inFlight();
      const args = { projectId: svc.projectId, id, outcome, at: new Date() };
      const settled = await recordOutcomeInOneStatement(svc.ts.store.db, args, env());
      if (backend.name === 'sqlite') {
        assert.equal(settled, undefined, 'SQLite records it in the writer batch\'s transaction');
        assert.deepEqual(await events(id), []);
        return;
      }
      assert.equal(settled, 'SUCCEEDED');
      const row = await svc.ts.store.db.selectFrom('executions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.status, 'SUCCEEDED');
      assert.equal(row.http_status, 200);
      assert.equal(row.completed_at, args.at.toISOString());
      const written = await events(id);
      assert.equal(written.length, 1);
      assert.equal(written[0]!.kind, 'execution.outcome');
      assert.deepEqual(JSON.parse(written[0]!.data), { execution_id: id, status: 'SUCCEEDED', http_status: 200, note: 'merchant answered 200' });
    });

    test('a row no longer in flight is left as it stands: nothing is written, and the transaction records a late outcome', async () => {
      const id = await inFlight();
      await svc.ts.store.db.updateTable('executions').set({ status: 'UNKNOWN', note: 'recovered' }).where('id', '=', id).execute();
      const args = { projectId: svc.projectId, id, outcome, at: new Date() };
      assert.equal(await recordOutcomeInOneStatement(svc.ts.store.db, args, env()), undefined);
      assert.deepEqual(await events(id), []);
      assert.equal(await svc.ts.store.transaction((trx) => recordOutcome(trx, args, env())), 'UNKNOWN');
      assert.deepEqual((await events(id)).map((e) => e.kind), ['execution.late_outcome']);
    });

    test('an answer recorded twice (the first commit\'s reply was lost) is one outcome; a late 500 after recovery\'s UNKNOWN is still kept', async () => {
      const id = await inFlight();
      const args = { projectId: svc.projectId, id, outcome, at: new Date() };
      for (let i = 0; i < 2; i++) assert.equal(await svc.ts.store.transaction((trx) => recordOutcome(trx, args, env())), 'SUCCEEDED');
      assert.deepEqual((await events(id)).map((e) => e.kind), ['execution.outcome']);
      // Recovery marked another call UNKNOWN; the merchant then answered 500, UNKNOWN too, but an
      // answer the person resolving it should see.
      const other = await inFlight();
      await svc.ts.store.db.updateTable('executions').set({ status: 'UNKNOWN', note: STOPPED_NOTE }).where('id', '=', other).execute();
      const failed = { status: 'UNKNOWN' as const, note: 'merchant answered 500: it may or may not have acted', httpStatus: 500 };
      assert.equal(await svc.ts.store.transaction((trx) => recordOutcome(trx, { ...args, id: other, outcome: failed }, env())), 'UNKNOWN');
      const late = await events(other);
      assert.deepEqual(late.map((e) => [e.kind, JSON.parse(e.data).http_status]), [['execution.late_outcome', 500]]);
      assert.equal((await svc.ts.store.db.selectFrom('executions').select('note').where('id', '=', other).executeTakeFirstOrThrow()).note, STOPPED_NOTE);
    });
  });
}
