// Resolution and listing, checked where a mutation audit (session 33) found nothing pinned: the
// answer and the audit event of a resolution say what was recorded; a resolver that read the row
// UNKNOWN but lost the conditional update gets conflict and the first statement stands; a list
// holds only its project's executions, 50 to a page unless asked otherwise.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { seedInFlight } from '../support/executions.ts';
import { anotherProject } from '../support/projects.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { resolveExecution } from '../../src/services/executions/resolve.ts';
import type { Store } from '../../src/store/store.ts';

for (const backend of backends()) {
  describe(`resolve and list on ${backend.name}`, () => {
    let svc: TestService;
    before(async () => { svc = await startService(backend); });
    after(async () => { await svc.stop(); });

    /** An execution recovery marked UNKNOWN, in `projectId`. */
    const unknown = async (projectId = svc.projectId) => {
      const id = await seedInFlight(svc.ts.store, projectId);
      await svc.ts.store.db.updateTable('executions').set({ status: 'UNKNOWN', note: 'the process making this call stopped mid-call' }).where('id', '=', id).execute();
      return id;
    };
    const stored = (id: string) => svc.ts.store.db.selectFrom('executions').select(['status', 'resolved_at', 'resolved_by', 'resolution_note']).where('id', '=', id).executeTakeFirstOrThrow();

    test('a resolution answers what it recorded, and its audit event says who, when and the note', async () => {
      const id = await unknown();
      const person = await svc.member(['ADMIN'], undefined, 'person');
      const res = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/executions/resolve`, headers: { authorization: `Bearer ${person.key}` },
        payload: { execution_id: id, outcome: 'SUCCEEDED', note: 'the merchant dashboard shows the charge' } });
      assert.equal(res.statusCode, 200, res.body);
      const answer = res.json();
      const row = await stored(id);
      assert.deepEqual(answer, { id, status: row.status, resolved_at: row.resolved_at, resolved_by: row.resolved_by, note: row.resolution_note });
      assert.deepEqual([answer.status, answer.resolved_by, answer.note], ['SUCCEEDED', person.keyId, 'the merchant dashboard shows the charge']);
      const events = await svc.ts.store.db.selectFrom('audit_events').select(['actor', 'created_at', 'data']).where('kind', '=', 'execution.resolved').execute();
      const mine = events.filter((e) => JSON.parse(e.data).execution_id === id);
      assert.equal(mine.length, 1);
      assert.equal(mine[0]!.actor, person.keyId);
      assert.equal(new Date(mine[0]!.created_at).toISOString(), answer.resolved_at);
      assert.deepEqual(JSON.parse(mine[0]!.data), { execution_id: id, outcome: 'SUCCEEDED', note: 'the merchant dashboard shows the charge' });
      // A note is at most 2000 characters.
      const other = await unknown();
      const resolve = (note: string) => svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/executions/resolve`, headers: { authorization: `Bearer ${person.key}` },
        payload: { execution_id: other, outcome: 'FAILED', note } });
      const long = await resolve('n'.repeat(2001));
      assert.equal(long.statusCode, 400, long.body);
      assert.deepEqual(long.json().errors.map((e: { pointer: string }) => e.pointer), ['/note']);
      assert.equal((await resolve('n'.repeat(2000))).statusCode, 200);
    });

    test('a resolver that read the execution UNKNOWN but lost the update gets conflict; the first statement stands', async () => {
      const id = await unknown();
      const first = { projectId: svc.projectId, executionId: id, outcome: 'FAILED' as const, note: 'no charge in the ledger', actor: 'key_first', at: new Date() };
      // The second resolver reads the row UNKNOWN; the first commits its resolution before the second writes.
      const racing = new Proxy(svc.ts.store, {
        get(target, prop, receiver) {
          if (prop === 'transaction') {
            return async (fn: Parameters<Store['transaction']>[0]) => { await resolveExecution(target, first); return target.transaction(fn); };
          }
          return Reflect.get(target, prop, receiver);
        },
      }) as Store;
      await assert.rejects(resolveExecution(racing, { ...first, outcome: 'SUCCEEDED', note: 'the charge went through', actor: 'key_second' }),
        (e: { status?: number; code?: string }) => e.status === 409 && e.code === 'conflict');
      assert.deepEqual({ ...(await stored(id)), resolved_at: null }, { status: 'FAILED', resolved_at: null, resolved_by: 'key_first', resolution_note: 'no charge in the ledger' });
      const events = (await svc.ts.store.db.selectFrom('audit_events').select('data').where('kind', '=', 'execution.resolved').execute()).filter((e) => JSON.parse(e.data).execution_id === id);
      assert.equal(events.length, 1, 'the loser recorded nothing');
    });

    test('a resolve body with a member it does not define is refused on both planes, and nothing is resolved', async () => {
      const id = await unknown();
      const person = await svc.member(['ADMIN'], undefined, 'person');
      const admin = await consoleMember(svc, ['ADMIN']);
      for (const res of [
        await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/executions/resolve`, headers: { authorization: `Bearer ${person.key}` },
          payload: { execution_id: id, outcome: 'FAILED', note: 'checked', resolved_by: 'someone else' } }),
        await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/executions/${id}/resolve`, headers: admin.post,
          payload: { outcome: 'FAILED', note: 'checked', resolved_by: 'someone else' } }),
      ]) {
        assert.equal(res.statusCode, 400, res.body);
        assert.ok(res.json().errors.some((e: { code: string; pointer: string }) => e.code === 'unknown_field' && e.pointer === '/resolved_by'), res.body);
      }
      assert.equal((await stored(id)).status, 'UNKNOWN');
    });

    test('a list holds its own project\'s executions only, on both planes', async () => {
      const mine = await seedInFlight(svc.ts.store, svc.projectId);
      const other = await anotherProject(svc.ts.store, ['ADMIN']);
      const theirs = await seedInFlight(svc.ts.store, other.projectId);
      const key = await svc.keyHeader([]);
      const auditor = await consoleMember(svc, ['AUDITOR']);
      for (const [plane, res] of [
        ['machine', await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/executions?limit=500`, headers: key })],
        ['console', await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/executions?limit=500`, headers: auditor.get })],
      ] as const) {
        const ids = res.json().executions.map((e: { id: string }) => e.id);
        assert.ok(ids.includes(mine), plane);
        assert.ok(!ids.includes(theirs), `${plane}: another project's execution is listed`);
      }
      const own = await svc.app.inject({ method: 'GET', url: `/v1/projects/${other.projectId}/executions`, headers: { authorization: `Bearer ${other.secret}` } });
      assert.deepEqual(own.json().executions.map((e: { id: string }) => e.id), [theirs]);
    });

    test('a list without limit gives 50 executions a page', async () => {
      const { projectId, secret } = await anotherProject(svc.ts.store, ['ADMIN']);
      for (let i = 0; i < 51; i++) await seedInFlight(svc.ts.store, projectId);
      const url = `/v1/projects/${projectId}/executions`;
      const headers = { authorization: `Bearer ${secret}` };
      const first = (await svc.app.inject({ method: 'GET', url, headers })).json();
      assert.equal(first.executions.length, 50);
      assert.notEqual(first.next_cursor, null);
      const rest = (await svc.app.inject({ method: 'GET', url: `${url}?cursor=${first.next_cursor}`, headers })).json();
      assert.deepEqual([rest.executions.length, rest.next_cursor], [1, null]);
    });
  });
}
