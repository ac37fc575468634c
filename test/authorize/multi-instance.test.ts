// Invariants 3 and 5 across instances: two Gavel processes on one PostgreSQL never overspend a
// budget; and a freeze committed while a decision is in flight denies that decision, on every path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, delegate as delegateTo, issue, newAgent } from '../support/authorize.ts';
import { permitCommitment } from '../../src/domain/permit/index.ts';
import { databaseUrl, spawnGavel } from '../support/process.ts';
import { freezeAgent } from '../../src/services/agents/agents.ts';

const pg = backends().find((b) => b.name === 'postgres');

test('two Gavel processes on PostgreSQL: a budget admitting exactly k is never overspent', { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  try {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const agent = newAgent();
    const k = 11;
    const { jws, commitment } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: k * 250, currency: 'EUR' } });
    const key = await svc.keyHeader([]);
    const env = { GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options) };
    const [a, b] = await Promise.all([spawnGavel(env), spawnGavel(env)]);
    try {
      const results = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
        const res = await fetch(`${(i % 2 ? a : b).url}/v1/authorize`, {
          method: 'POST', headers: { ...key, 'content-type': 'application/json' },
          body: JSON.stringify({ agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 250, currency: 'EUR' } }),
        });
        assert.equal(res.status, 200);
        return (await res.json() as { decision: string }).decision;
      }));
      assert.equal(results.filter((d) => d === 'ALLOW').length, k);
      const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', commitment).executeTakeFirstOrThrow();
      assert.equal(usage.spent_minor, k * 250);
    } finally {
      await Promise.all([a.kill(), b.kill()]);
    }
  } finally { await svc.stop(); }
});

// The key's first decision looks the key up and takes the transaction; once its context is cached,
// a plain decision commits as one statement (decision 0012), and one that spends (or presents a
// delegated permit) takes the transaction with the cached key, whose agent lock is taken in
// recheck.ts (CHECKED_AT_COMMIT). Each must wait for a freeze held open by another connection and
// see it: the agent's own, or (a delegated permit) its delegator's, read FOR SHARE too.
const PATHS = ['the transaction', 'one statement', 'the transaction, key cached', "a delegator's freeze"] as const;
for (const path of PATHS) test(`a freeze committed while a decision is in flight denies that decision (PostgreSQL, ${path})`, { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  try {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const key = await svc.keyHeader([]);
    const agent = newAgent();
    const decide = (payload: Record<string, unknown>) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload }).then((r) => r.json() as Promise<{ decision: string; reason_code: string; detail?: string }>);
    let payload: Record<string, unknown>;
    let frozen = agent.did;
    if (path === 'the transaction, key cached') {
      const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 10_000, currency: 'EUR' } });
      payload = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } };
    } else if (path === "a delegator's freeze") {
      const delegate = newAgent();
      const root = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      payload = { agent: delegate.did, permit: await delegateTo(root.jws, agent, delegate.did, { actions: ['read'], resources: ['resource://docs/*'] }), action: 'read', resource: 'resource://docs/a' };
      frozen = agent.did;
    } else {
      const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      payload = { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' };
    }
    // Warm the key, the permit and the agents' rows, as a busy agent's would be (not for the first path).
    if (path !== 'the transaction') assert.equal((await decide(payload)).decision, 'ALLOW');
    const other = svc.ts.reopen();
    let inFlight: Promise<{ decision: string; reason_code: string; detail?: string }> | undefined;
    await other.transaction(async (trx) => {
      await freezeAgent(trx, { projectId: svc.projectId, did: frozen, actor: 'system', reason: 'race', at: new Date().toISOString() });
      // The decision starts while the freeze is not yet committed: its permit and policy checks
      // pass; it must then wait for the freeze and see it inside its own commit.
      inFlight = decide(payload);
      await new Promise((r) => setTimeout(r, 300));
    });
    const decided = await inFlight!;
    assert.deepEqual([decided.decision, decided.reason_code], ['DENY', 'agent_frozen'], JSON.stringify(decided));
    if (path === "a delegator's freeze") assert.match(decided.detail ?? '', /delegated by/);
    if (path === 'the transaction, key cached') {
      const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', permitCommitment(payload.permit as string)).executeTakeFirstOrThrow();
      assert.deepEqual([Number(usage.spent_minor), Number(usage.uses)], [100, 1], 'only the warm-up spent');
    }
  } finally { await svc.stop(); }
});

// A busy agent's decisions overlap: each holds the agent's row FOR SHARE while it waits for the
// contended budget row, and a new share lock joins the holders without queuing behind a waiting
// UPDATE. Before the freeze queued on a table lock (agents.ts, queueAheadOfDecisions), it waited for
// the load to stop, however long that was, and thousands of ALLOWs went out meanwhile.
test('a freeze takes effect while its agent is busy spending, not once the load stops (PostgreSQL)', { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  try {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const agent = newAgent();
    const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 100_000_000, currency: 'EUR' } });
    const key = await svc.keyHeader([]);
    const server = await spawnGavel({ GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options) });
    try {
      const decide = async () => {
        const res = await fetch(`${server.url}/v1/authorize`, { method: 'POST', headers: { ...key, 'content-type': 'application/json' },
          body: JSON.stringify({ agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 1, currency: 'EUR' } }) });
        return (await res.json() as { decision: string; reason_code: string }).reason_code;
      };
      const CLIENTS = 12;
      let freezeSent = false;
      let answered = false;
      let allowedAfterFreezeSent = 0;
      // The load stops once the freeze has answered, or after a bound only a starved freeze reaches.
      const bound = Date.now() + 30_000;
      const clients = Array.from({ length: CLIENTS }, async () => {
        let n = 0;
        while (!answered && Date.now() < bound) {
          const sentAfter = freezeSent;
          if ((await decide()) === 'policy_allow' && sentAfter) allowedAfterFreezeSent++;
          n++;
        }
        return n;
      });
      await new Promise((r) => setTimeout(r, 300));
      freezeSent = true;
      const freeze = await fetch(`${server.url}/v1/projects/${svc.projectId}/agents/freeze`, { method: 'POST', headers: { ...key, 'content-type': 'application/json' }, body: JSON.stringify({ agent: agent.did, reason: 'busy' }) });
      answered = true;
      assert.equal(freeze.status, 200, await freeze.text());
      const counts = await Promise.all(clients);
      assert.ok(counts.every((n) => n > 0), 'every client decided before the freeze');
      // Only decisions already in flight when the freeze reached the database may still be allowed:
      // about one a client. A starved freeze let every client go on deciding until the load stopped.
      assert.ok(allowedAfterFreezeSent <= 3 * CLIENTS, `${allowedAfterFreezeSent} ALLOWs for requests sent after the freeze`);
      assert.equal(await decide(), 'agent_frozen');
    } finally { await server.kill(); }
  } finally { await svc.stop(); }
});

// Any key may ask for a freeze, and the table lock pauses every decision of the database: a freeze
// that changes nothing (the agent is frozen already) answers 409 without it. Here a transaction of
// another connection holds a share lock on agents, as a decision in flight does: a freeze that
// took the table lock would wait for it (for ever, in this test), the 409 does not.
test('a freeze of a frozen agent, or a release of one not frozen, answers 409 without queuing for the table lock (PostgreSQL)', { skip: !pg && 'PostgreSQL not configured', timeout: 120_000 }, async () => {
  const svc = await startService(pg!);
  const other = svc.ts.reopen();
  try {
    const key = await svc.keyHeader(['ADMIN']);
    const frozen = newAgent().did;
    const free = newAgent().did;
    const post = (path: string, agent: string) => svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/${path}`, headers: key, payload: { agent } });
    assert.equal((await post('freeze', frozen)).statusCode, 200);
    assert.equal((await post('freeze', free)).statusCode, 200);
    assert.equal((await post('release', free)).statusCode, 200);
    await other.db.transaction().execute(async (trx) => {
      await sql`select 1 from agents limit 1 for share`.execute(trx);
      const again = await post('freeze', frozen);
      assert.equal(again.statusCode, 409);
      assert.equal(again.json().code, 'agent_already_frozen');
      const release = await post('release', free);
      assert.equal(release.statusCode, 409);
      assert.equal(release.json().code, 'agent_not_frozen');
    });
  } finally { await svc.stop(); }
});
