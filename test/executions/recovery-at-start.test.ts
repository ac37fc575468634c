// An instance that starts does not take the others for dead at once (PostgreSQL, real processes).
// After a database outage every heartbeat is stale; the first instance to start once the database
// answers again would otherwise mark the calls of every other instance, alive and reconnecting,
// UNKNOWN, and their callers would be told UNKNOWN for calls their merchant answered. So a starting
// instance judges others only once it has itself beaten without a break for longer than
// STALE_AFTER_MS, as an instance back from an outage does (recovery-after-outage.test.ts).
// Here the outage is A's alone (a relay in front of the database, cut), so that C can start during it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { databaseUrl, prepareForChildren, spawnGavel, type GavelProcess } from '../support/process.ts';
import { merchantsFile, startMerchant } from '../support/merchant.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { STALE_AFTER_MS } from '../../src/services/executions/recovery.ts';
import type { Store } from '../../src/store/store.ts';

const pg = backends().find((b) => b.name === 'postgres');

/** How old (by the database's clock) an instance's heartbeat is, in ms. */
async function heartbeatAge(store: Store, instanceId: string): Promise<number> {
  const { rows } = await sql<{ ms: string }>`select floor(extract(epoch from clock_timestamp()) * 1000)::bigint
    - floor(extract(epoch from heartbeat_at::timestamptz) * 1000)::bigint as ms from execution_instances where id = ${instanceId}`.execute(store.db);
  return Number(rows[0]!.ms);
}

async function until(what: string, check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  for (const t0 = Date.now(); Date.now() - t0 < ms; await sleep(100)) if (await check()) return;
  assert.fail(`timed out waiting until ${what}`);
}

test('an instance starting while another was cut off from the database leaves its call in flight alone', { skip: pg ? false : 'needs GAVEL_TEST_DATABASE_URL', timeout: 180_000 }, async () => {
  const merchant = await startMerchant();
  const file = merchantsFile(merchant.url, 60_000);
  const { svc, agent, jws, key, env } = await prepareForChildren(pg!, { merchantsFile: file });
  const proxy = await startTcpProxy(databaseUrl(svc.ts.options)!);
  const store = svc.ts.reopen();
  const procs: GavelProcess[] = [];
  try {
    const a = await spawnGavel({ ...env, GAVEL_DATABASE_URL: proxy.url });
    procs.push(a);
    const nonce = randomUUID();
    const answer = fetch(`${a.url}/v1/authorize`, {
      method: 'POST', headers: { ...key, 'content-type': 'application/json' },
      body: JSON.stringify({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a', execution: { merchant: 'shop', operation: 'hold', payload: {}, nonce } }),
    }).then(async (r) => await r.json() as { decision: string; execution?: { status: string } });
    answer.catch(() => {}); // A is killed if an assertion fails first: that failure is the one to report
    await merchant.waitForCalls(1);
    const row = await store.db.selectFrom('executions').select(['id', 'instance_id']).executeTakeFirstOrThrow();

    proxy.cut(); // A's outage: its call waits on the merchant, its heartbeats fail
    await until('A\'s heartbeat is stale', async () => await heartbeatAge(store, row.instance_id) > STALE_AFTER_MS + 1_000);
    procs.push(await spawnGavel(env)); // C, the first instance up (its start sweep has run once it listens)
    const status = async () => (await store.db.selectFrom('executions').select('status').where('id', '=', row.id).executeTakeFirstOrThrow()).status;
    assert.equal(await status(), 'IN_FLIGHT', 'a starting instance took the call of an instance it never watched for dead');

    proxy.restore();
    await until('A beats again', async () => await heartbeatAge(store, row.instance_id) < STALE_AFTER_MS / 2);
    merchant.release();
    const body = await answer;
    assert.equal(body.decision, 'ALLOW');
    assert.equal(body.execution?.status, 'SUCCEEDED');
    assert.equal(await status(), 'SUCCEEDED');
    assert.equal(merchant.calls.get(nonce), 1);
    const unknown = await store.db.selectFrom('audit_events').select('id').where('kind', 'in', ['execution.unknown', 'execution.late_outcome']).execute();
    assert.deepEqual(unknown, []);
  } finally {
    for (const p of procs) await p.kill('SIGKILL');
    await proxy.close();
    await merchant.close();
    await svc.ts.cleanup();
  }
});
