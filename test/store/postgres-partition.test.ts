// An instance cut off from PostgreSQL in the middle of a transaction (a network partition, a paused
// process or VM) leaves its session idle in that transaction, holding its locks. The server ends
// such a session after IDLE_IN_TRANSACTION_MS (store/postgres/dialect.ts; 1 s here): the other
// instances go on, and the cut-off one, once it hears again, answers 503 for what did not commit,
// and recovers by itself.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { relayed, type TcpProxy } from '../support/tcp-proxy.ts';
import { newAgent } from '../support/authorize.ts';
import { holdTable } from '../support/hold-table.ts';
import type { Store } from '../../src/store/store.ts';

const postgres = backends().find((b) => b.name === 'postgres');

describe('an instance partitioned from PostgreSQL mid-transaction', { skip: !postgres && 'PostgreSQL not configured' }, () => {
  let svc: TestService;
  let relay: () => TcpProxy;
  let other: Store; // another instance, with a path of its own to the database
  before(async () => {
    const r = relayed(postgres!, { idleInTransactionMs: 1_000 });
    relay = r.relay;
    svc = await startService(r.backend);
    other = svc.ts.reopen();
  });
  after(async () => { relay().heal(); await svc.stop(); });

  /**
   * Holds `table`, runs `start` on the service until its transaction waits at its statement `like`
   * (its earlier locks taken), partitions the service from the database, then lets that statement
   * finish (its answer goes nowhere: the session idles in the transaction). Returns how long
   * `waiter`, run on the other instance, took then (or 'waiting' after 8 s).
   */
  async function partitionedAt(table: string, like: string, start: () => void, waiter: () => Promise<unknown>): Promise<number | 'waiting'> {
    const held = await holdTable(process.env.GAVEL_TEST_DATABASE_URL!, (svc.ts.options as { schema: string }).schema, table);
    start();
    await held.reached(like);
    relay().partition();
    await held.release();
    const t0 = Date.now();
    return Promise.race([waiter().then(() => Date.now() - t0), sleep(8_000, 'waiting' as const)]);
  }

  test('a freeze does not hold the other instances\' decisions; it answers 503, keeps nothing, and a retry succeeds', async () => {
    const key = await svc.keyHeader(['ADMIN']);
    const agent = newAgent().did;
    const freeze = () => svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent } });
    let first: ReturnType<typeof freeze> | undefined;
    // The freeze stops at its audit event, its table lock on agents taken; a decision elsewhere
    // locks the agent's row as that lock forbids.
    const waited = await partitionedAt('audit_events', 'insert into audit_events%', () => { first = freeze(); },
      () => sql`select frozen_at from agents where project_id = ${svc.projectId} and did = ${agent} for share`.execute(other.db));
    relay().heal();
    assert.notEqual(waited, 'waiting', 'the cut-off instance\'s transaction still held the agents table after 8 s');
    const res = await first!;
    assert.deepEqual([res.statusCode, res.json().code], [503, 'database_unavailable'], res.body);
    // Nothing of the freeze was kept: the agent is not frozen and no event says it is.
    const row = await other.db.selectFrom('agents').select('frozen_at').where('project_id', '=', svc.projectId).where('did', '=', agent).executeTakeFirst();
    assert.equal(row?.frozen_at ?? null, null);
    const events = await other.db.selectFrom('audit_events').select('id').where('kind', '=', 'agent.frozen').where('data', 'like', `%${agent}%`).execute();
    assert.equal(events.length, 0);
    const again = await freeze();
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().frozen, true);
  });

  test('a sequencing batch does not hold the audit log from the next leader, and the log goes on once it is back', async () => {
    const admin = await svc.keyHeader(['ADMIN']);
    const agent = newAgent().did;
    // The batch stops at its tree nodes, the log's state row locked; the next leader's batch locks that row.
    const waited = await partitionedAt('audit_nodes', '%insert into audit_nodes%', () => {
      void svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: admin, payload: { agent } });
    }, () => other.transaction((trx) => sql`select size from audit_log_state where id = 1 for update`.execute(trx)));
    relay().heal();
    assert.notEqual(waited, 'waiting', 'the cut-off instance\'s batch still held the log\'s state row after 8 s');
    let waiting = -1;
    for (let i = 0; i < 100 && waiting !== 0; i++) {
      await sleep(100);
      waiting = (await other.db.selectFrom('audit_events').select('id').where('leaf_index', 'is', null).execute()).length;
    }
    assert.equal(waiting, 0, 'events were left unsequenced');
  });
});
