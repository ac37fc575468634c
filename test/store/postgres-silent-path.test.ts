// A path to PostgreSQL that goes silent (a partition, a lost NAT entry: no reset) must not hold the
// instance's own requests until the kernel gives up on the socket (about 15 minutes with a statement
// unanswered). A statement unanswered after the reply timeout (store/postgres/dialect.ts; 1 s here)
// destroys its connection: the request is 503 database_unavailable, and once the path is back the
// same requests succeed, the audit log neither missing nor repeating an event. A write that reached
// the server and whose answer was lost is unconfirmed, as on a dropped connection: 503, kept once.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { relayed, type TcpProxy } from '../support/tcp-proxy.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { openStore, type Store, type StoreOptions } from '../../src/store/store.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';

const postgres = backends().find((b) => b.name === 'postgres');
const REPLY_TIMEOUT_MS = 1_000;
// A transaction cut off mid-way (the audit log's sequencing batch holding the state row, say) lives
// on at the server, idle in transaction, until this bound ends it: the log resumes after it.
const IDLE_IN_TRANSACTION_MS = 1_500;

describe('an instance whose path to PostgreSQL goes silent', { skip: !postgres && 'PostgreSQL not configured' }, () => {
  let svc: TestService;
  let direct: Store; // the same database, not through the relay
  let relay: () => TcpProxy;
  let admin: ConsoleMember;
  let key: { authorization: string };
  const agent = newAgent().did;
  let permit: string;
  before(async () => {
    // Connecting is bounded apart (connectTimeoutMs): a request that needs a new connection meanwhile waits that long.
    const r = relayed(postgres!, { replyTimeoutMs: REPLY_TIMEOUT_MS, connectTimeoutMs: REPLY_TIMEOUT_MS, idleInTransactionMs: IDLE_IN_TRANSACTION_MS });
    relay = r.relay;
    svc = await startService(r.backend);
    direct = svc.ts.reopen();
    await activatePolicy(svc, ALLOW_PAYMENTS);
    admin = await consoleMember(svc, ['ADMIN']);
    key = await svc.keyHeader([]);
    permit = (await issue(svc, agent, { actions: ['read'], resources: ['resource://docs/*'] })).jws;
  });
  after(async () => { relay().heal(); await svc.stop(); });

  const decide = (resource: string, headers = key) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers, payload: { agent, permit, action: 'read', resource } });
  const register = (did: string) => svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/agents`, headers: admin.post, payload: { did } });
  /** The answer and how long it took, or 'waiting' after 8 s. */
  const timed = async (res: Promise<{ statusCode: number; json(): { code?: string } }>) => {
    const t0 = Date.now();
    const r = await Promise.race([res, sleep(8_000, 'waiting' as const)]);
    return r === 'waiting' ? r : { status: r.statusCode, code: r.json().code, ms: Date.now() - t0 };
  };
  /**
   * Waits until the log has sequenced every event, and checks that its leaves have no gap and no
   * repeat. A sequencing batch the silence cut off holds the log's state row at the server until
   * IDLE_IN_TRANSACTION_MS ends it (and the batches queued behind it, each given up after
   * REPLY_TIMEOUT_MS, hold it in turn only until the server finds their connections gone): the
   * wait covers that bound with room for a loaded machine.
   */
  const logWhole = async () => {
    let unsequenced = -1;
    const until = Date.now() + 4 * (IDLE_IN_TRANSACTION_MS + REPLY_TIMEOUT_MS);
    while (Date.now() < until && unsequenced !== 0) {
      await sleep(50);
      unsequenced = (await direct.db.selectFrom('audit_events').select('id').where('leaf_index', 'is', null).execute()).length;
    }
    assert.equal(unsequenced, 0, 'events were left unsequenced');
    const leaves = (await direct.db.selectFrom('audit_events').select('leaf_index').orderBy('leaf_index').execute()).map((e) => e.leaf_index);
    assert.deepEqual(leaves, leaves.map((_, i) => i), 'the log has a gap or a repeated leaf');
  };
  /** The audit events naming `text` (a resource, an agent), by kind, read past the relay. */
  const eventsNaming = async (text: string) => (await direct.db.selectFrom('audit_events').select('kind')
    .where('project_id', '=', svc.projectId).where('data', 'like', `%${text}%`).execute()).map((e) => e.kind).sort();

  test('a decision and a console write are 503 within the bound; once the path is back both succeed, each recorded once', async () => {
    // Warm: the pool holds connections, which the partition leaves open and silent.
    assert.equal((await decide('resource://docs/warm')).statusCode, 200);
    const other = newAgent().did;
    // A key never used: the decision's first statement reads it (with a cached one it would be the
    // decision's write, which the relay may still deliver once it heals: the next test's case).
    const fresh = await svc.keyHeader([]);
    relay().partition();
    try {
      const [decided, registered] = await Promise.all([timed(decide('resource://docs/cut', fresh)), timed(register(other))]);
      for (const [what, r] of [['decision', decided], ['console write', registered]] as const) {
        assert.notEqual(r, 'waiting', `the ${what} was still waiting after 8 s`);
        if (r === 'waiting') return;
        assert.deepEqual([r.status, r.code], [503, 'database_unavailable'], what);
        // The bound, plus a retry's connect timeout at most (the connection it was on was destroyed).
        assert.ok(r.ms < 3 * REPLY_TIMEOUT_MS, `the ${what} took ${r.ms} ms`);
      }
    } finally { relay().heal(); }
    // The path is back: the destroyed connections were not returned to the pool.
    const again = await decide('resource://docs/after');
    assert.equal(again.statusCode, 200, again.body);
    const registeredAgain = await register(other);
    assert.equal(registeredAgain.statusCode, 201, registeredAgain.body);
    // Each statement that met the silence was a read (the caller's key or session): nothing of those requests was kept.
    assert.deepEqual(await eventsNaming('resource://docs/cut'), []);
    assert.deepEqual(await eventsNaming('resource://docs/after'), ['decision']);
    assert.deepEqual(await eventsNaming(other), ['agent.registered']);
    await logWhole();
  });

  test('a decision whose write reached the server but whose answer did not is 503 within the bound, and recorded once', async () => {
    // Warm caches (the key, the policy pointer): the decision's only statement is its write, which commits by itself.
    for (const r of ['resource://docs/warm-1', 'resource://docs/warm-2']) assert.equal((await decide(r)).statusCode, 200);
    relay().deafen();
    let answer: Awaited<ReturnType<typeof timed>>;
    try { answer = await timed(decide('resource://docs/unanswered')); } finally { relay().heal(); }
    assert.notEqual(answer, 'waiting', 'the decision was still waiting after 8 s');
    if (answer === 'waiting') return;
    // Unconfirmed, as when the connection drops (decision 0013 addendum): 503, and not run again.
    assert.deepEqual([answer.status, answer.code], [503, 'database_unavailable']);
    assert.ok(answer.ms < 3 * REPLY_TIMEOUT_MS, `the decision took ${answer.ms} ms`);
    assert.deepEqual(await eventsNaming('resource://docs/unanswered'), ['decision'], 'the committed decision is in the log, once');
    assert.equal((await decide('resource://docs/answered')).statusCode, 200);
    await logWhole();
  });
});

test('a migration may wait longer than the reply timeout (here for another instance\'s migration lock)', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const ts = await postgres!.open({ migrate: false });
  const store = openStore({ ...(ts.options as Extract<StoreOptions, { kind: 'postgres' }>), replyTimeoutMs: REPLY_TIMEOUT_MS });
  // Kysely's migration lock (its PostgreSQL adapter's advisory lock), held as a migrating instance holds it.
  const other = new pg.Client({ connectionString: process.env.GAVEL_TEST_DATABASE_URL });
  await other.connect();
  try {
    await other.query('select pg_advisory_lock(3853314791062309107)');
    const migrating = migrateToLatest(store);
    await sleep(2.5 * REPLY_TIMEOUT_MS);
    await other.query('select pg_advisory_unlock(3853314791062309107)');
    assert.ok((await migrating).includes('0001_core'));
  } finally { await other.end(); await store.close(); await ts.cleanup(); }
});
