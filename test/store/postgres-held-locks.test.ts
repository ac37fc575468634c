// A lock held from outside Gavel (an operator's psql session left open after `begin; select … for
// update`, another tool's transaction) on a row a decision or a freeze needs. Gavel's own sessions
// are ended when idle in a transaction (decision 0026 addendum), another client's are not: the lock
// may be held for as long as that session lives. PostgreSQL only: SQLite has no other sessions' row locks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { backends, type Backend } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { relayed } from '../support/tcp-proxy.ts';
import { untilWaiting, waitingStatements } from '../support/hold-table.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';

const postgres = backends().find((b) => b.name === 'postgres');
const REPLY_TIMEOUT_MS = 1_000;

/** A service with two agents known and their caches warm, and the other client's connection. */
async function held(backend: Backend) {
  const svc = await startService(backend);
  const direct = svc.ts.reopen(); // the same database, not through a relay
  const schema = (svc.ts.options as { schema: string }).schema;
  await activatePolicy(svc, ALLOW_PAYMENTS);
  const key = await svc.keyHeader([]);
  const [locked, other] = [newAgent().did, newAgent().did];
  const permits = new Map<string, string>();
  const decide = (agent: string, resource: string) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent, permit: permits.get(agent), action: 'read', resource } });
  for (const agent of [locked, other]) {
    permits.set(agent, (await issue(svc, agent, { actions: ['read'], resources: ['resource://docs/*'] })).jws);
    // Known (its row exists) and the caches warm: the next decision's only statement is its write.
    assert.equal((await decide(agent, 'resource://docs/warm')).statusCode, 200);
  }
  // The other client: its session is not Gavel's.
  const outside = new pg.Client({ connectionString: process.env.GAVEL_TEST_DATABASE_URL, options: `-c search_path=${schema}` });
  await outside.connect();
  return {
    svc, key, locked, other, outside, decide,
    lockRow: async (agent: string) => { await outside.query('begin'); await outside.query('select 1 from agents where did = $1 for update', [agent]); },
    /** This service's sessions waiting for a lock, as the server sees them. */
    waitingSessions: () => waitingStatements(outside, schema),
    /** True once this service's `like` statement waits for a lock. */
    waitsFor: (like: string) => untilWaiting(outside, schema, like),
    eventsNaming: async (text: string) => (await direct.db.selectFrom('audit_events').select('kind')
      .where('project_id', '=', svc.projectId).where('data', 'like', `%${text}%`).execute()).map((e) => e.kind).sort(),
    async stop() { await outside.end(); await svc.stop(); },
  };
}

/** The answer and how long it took, or 'waiting' after 12 s. */
const timed = async (res: Promise<{ statusCode: number; json(): { code?: string } }>) => {
  const t0 = Date.now();
  const r = await Promise.race([res, sleep(12_000, 'waiting' as const)]);
  return r === 'waiting' ? r : { status: r.statusCode, code: r.json().code, ms: Date.now() - t0 };
};

test('a decision given up after the reply timeout behind a held row lock leaves no session behind at the server, and nothing recorded', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  // Through a relay that carries everything, for a 1 s reply timeout (the store's option).
  const { locked, outside, decide, lockRow, waitingSessions, eventsNaming, stop } = await held(relayed(postgres!, { replyTimeoutMs: REPLY_TIMEOUT_MS }).backend);
  try {
    await lockRow(locked);
    try {
      for (const n of [1, 2, 3]) {
        const r = await timed(decide(locked, `resource://docs/held-${n}`));
        assert.notEqual(r, 'waiting', 'the decision was still waiting after 12 s');
        if (r !== 'waiting') assert.deepEqual([r.status, r.code], [503, 'database_unavailable']);
      }
      // The server ends the sessions whose client went away: without that each one given up stays
      // queued for the lock (one more per timeout, up to max_connections while the lock is held),
      // then runs its statement once the lock comes free, the decision answered 503 recorded after all.
      let waiting = await waitingSessions();
      for (let i = 0; i < 80 && waiting > 0; i++) { await sleep(100); waiting = await waitingSessions(); }
      assert.equal(waiting, 0, 'sessions given up on still wait for the lock at the server');
    } finally { await outside.query('commit'); }
    await sleep(500);
    assert.deepEqual(await eventsNaming('resource://docs/held-'), [], 'a decision answered 503 was recorded once the lock came free');
    assert.equal((await decide(locked, 'resource://docs/after')).statusCode, 200);
  } finally { await stop(); }
});

test('a freeze waiting behind a held row lock is 503 within a bound, changes nothing, and holds up other agents\' decisions only that long', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  // The default reply timeout (30 s): the freeze's own bound is shorter.
  const { svc, key, locked, other, outside, decide, lockRow, waitsFor, eventsNaming, stop } = await held(postgres!);
  const freeze = () => svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent: other, reason: 'held' } });
  try {
    await lockRow(locked);
    try {
      // Any agent's freeze: its table lock waits for the row's holder, every decision after it in line.
      const freezing = timed(freeze());
      // Waiting indeed (a fixed pause may end first on a loaded machine): the decision then meets it.
      assert.ok(await waitsFor('lock table agents%'), 'the freeze waits for the held row');
      const decided = await timed(decide(other, 'resource://docs/while-freezing'));
      const frozen = await freezing;
      assert.notEqual(frozen, 'waiting', 'the freeze was still waiting after 12 s');
      assert.notEqual(decided, 'waiting', 'another agent\'s decision was still waiting after 12 s');
      if (frozen === 'waiting' || decided === 'waiting') return;
      assert.deepEqual([frozen.status, frozen.code], [503, 'busy']);
      assert.equal(decided.status, 200);
      assert.deepEqual(await eventsNaming('"reason":"held"'), [], 'nothing of the freeze was kept');
    } finally { await outside.query('commit'); }
    const retried = await freeze();
    assert.equal(retried.statusCode, 200, retried.body);
    assert.equal((await decide(other, 'resource://docs/frozen')).json().reason_code, 'agent_frozen');
  } finally { await stop(); }
});
