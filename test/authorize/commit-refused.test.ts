// Invariant 1 on PostgreSQL, made deterministic: a decision is answered only once its COMMIT has
// returned. A deferred constraint trigger refuses the COMMIT of the decision's audit event, so the
// event is never durable: the answer must not be ALLOW, on the transaction path (a budget spent) and
// on the one statement (decision 0013). A kill -9 under load (durability.test.ts) rarely lands in
// the one round trip between a statement and its COMMIT; this does every time (a mutation audit in
// session 52 found an answer before the COMMIT's return caught only by timing).
// PostgreSQL only: SQLite has no deferred constraints, and its writer's flush before answering is
// held by test/store/writer-thread.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';

const pg = backends().find((b) => b.name === 'postgres');

test('a decision whose COMMIT is refused is answered with no ALLOW, and nothing of it is recorded or spent (postgres)', { skip: pg ? false : 'needs GAVEL_TEST_DATABASE_URL' }, async () => {
  const svc = await startService(pg!);
  try {
    const key = await svc.keyHeader([]);
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const agent = newAgent();
    const budget = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 10_000, currency: 'EUR' } });
    const plain = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
    const db = svc.ts.store.db;
    // Each path answers ALLOW before the trigger exists.
    const ask = (payload: object) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload });
    const spending = (leaf: string) => ({ agent: agent.did, permit: budget.jws, action: 'pay', resource: `resource://shop/${leaf}`, amount: { minor: 100, currency: 'EUR' } });
    const reading = (leaf: string) => ({ agent: agent.did, permit: plain.jws, action: 'read', resource: `resource://docs/${leaf}` });
    for (const payload of [spending('ok'), reading('ok')]) assert.equal((await ask(payload)).json().decision, 'ALLOW');
    await sql`create function refuse_marked_commit() returns trigger language plpgsql as $$ begin
      if new.data::text like '%refused-commit%' then raise exception 'the commit is refused'; end if; return null; end $$`.execute(db);
    await sql`create constraint trigger refuse_marked_commit after insert on audit_events deferrable initially deferred
      for each row execute function refuse_marked_commit()`.execute(db);
    const spent = async () => (await db.selectFrom('permit_usage').select(['spent_minor']).execute()).map((r) => String(r.spent_minor));
    const spentBefore = await spent();
    for (const payload of [spending('refused-commit'), reading('refused-commit')]) {
      const res = await ask(payload);
      assert.notEqual(res.json().decision, 'ALLOW', `an ALLOW whose event never committed: ${res.statusCode} ${res.body}`);
      assert.equal(res.statusCode, 500, res.body);
    }
    const events = await sql<{ n: number }>`select count(*)::int as n from audit_events where data::text like '%refused-commit%'`.execute(db);
    assert.equal(events.rows[0]!.n, 0, 'no event of the refused decisions');
    assert.deepEqual(await spent(), spentBefore, 'nothing spent');
  } finally { await svc.stop(); }
});
