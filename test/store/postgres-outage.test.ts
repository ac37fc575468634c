// A database that refuses connections, stops answering, or drops one mid-write (audit of
// PostgreSQL outages): every refusal is 503 database_unavailable, never 500; readiness and queries
// are bounded in time; a leader that stops answering loses the audit log's lock; a merchant's
// outcome survives a dropped connection.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { toProblem } from '../../src/http/errors.ts';
import { openStore } from '../../src/store/store.ts';
import { startAuditLog } from '../../src/services/auditlog/runner.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { Executions } from '../../src/services/executions/executions.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { merchantsFile, startMerchant, type TestMerchant } from '../support/merchant.ts';
import { stopBoth } from '../support/payments.ts';

const pg = backends().find((b) => b.name === 'postgres');

test('a server refusing the connection (FATAL: 55000 no connections allowed, 53300 too many, 3D000 no such database) is 503, not 500', () => {
  for (const [code, message] of [['55000', 'database "x" is not currently accepting connections'], ['53300', 'sorry, too many clients already'], ['3D000', 'database "x" does not exist']]) {
    const p = toProblem(Object.assign(new Error(message), { code, severity: 'FATAL' }) as never);
    assert.deepEqual([p.status, p.code], [503, 'database_unavailable'], message);
  }
  // A statement's own error (severity ERROR) is not an outage.
  assert.equal(toProblem(Object.assign(new Error('object not in prerequisite state'), { code: '55000', severity: 'ERROR' }) as never).status, 500);
});

test('a refused connection, for real: the error a query gets maps to 503', { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const url = new URL(process.env.GAVEL_TEST_DATABASE_URL!);
  url.pathname = `/gavel_no_such_database_${randomUUID().slice(0, 8)}`;
  const store = openStore({ kind: 'postgres', url: url.toString() });
  try {
    const error = await sql`select 1`.execute(store.db).then(() => undefined, (e: unknown) => e);
    assert.ok(error, 'the query failed');
    assert.deepEqual([toProblem(error as never).status, toProblem(error as never).code], [503, 'database_unavailable'], String(error));
  } finally { await store.close(); }
});

describe('a database that accepts connections but never answers (a partition, a paused host)', () => {
  let server: Server;
  let port: number;
  const sockets = new Set<Socket>();
  before(async () => {
    server = createServer((s) => { sockets.add(s); s.on('error', () => {}); });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  after(async () => { for (const s of sockets) s.destroy(); await new Promise((resolve) => server.close(resolve)); });

  test('readiness answers false in time, and a query fails with a 503 error instead of waiting for ever', async () => {
    const store = openStore({ kind: 'postgres', url: `postgres://gavel@127.0.0.1:${port}/gavel`, connectTimeoutMs: 500 });
    try {
      const t0 = Date.now();
      assert.equal(await store.ping(300), false);
      assert.ok(Date.now() - t0 < 2_000, `ping took ${Date.now() - t0} ms`);
      const error = await Promise.race([sql`select 1`.execute(store.db).then(() => 'answered', (e: unknown) => e), sleep(5_000, 'still waiting')]);
      assert.notEqual(error, 'still waiting', 'the query waited for ever');
      assert.equal(toProblem(error as never).status, 503, String(error));
    } finally { for (const s of sockets) s.destroy(); await store.close(); }
  });
});

test('a leader that stops talking to the database loses the audit log to another instance', { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  const b = svc.ts.reopen();
  const signer = new LocalSigner(`${svc.ts.dataDir}/keys`);
  await svc.auditLog.stop(); // the service's own runner stays out of the election
  // A leads in a process of its own, then is stopped (SIGSTOP): a paused process, its connection
  // (and the lock) left open, its lease no longer renewed.
  const child = spawn(process.execPath, [new URL('../support/audit-leader-child.ts', import.meta.url).pathname, JSON.stringify(svc.ts.options), `${svc.ts.dataDir}/keys`], { stdio: ['ignore', 'pipe', 'inherit'] });
  let second: ReturnType<typeof startAuditLog> | undefined;
  try {
    const [line] = await once(createInterface({ input: child.stdout! }), 'line') as [string];
    assert.equal(line, 'leader');
    second = startAuditLog(b, signer, { tickMs: 100_000, intervalMs: 1000, maxEvents: 1000, witness: undefined });
    assert.equal((await second.tick()).leader, false, 'A holds the lock while it runs, renewing its lease');
    await sleep(1_500);
    assert.equal((await second.tick()).leader, false, 'a leader renews its lease whether or not it ticks');
    child.kill('SIGSTOP');
    let leader = false;
    for (let i = 0; i < 40 && !leader; i++) { await sleep(100); leader = (await second.tick()).leader; }
    assert.equal(leader, true, 'the paused leader kept the lock');
  } finally { child.kill('SIGKILL'); await second?.stop(); await svc.stop(); }
});

for (const backend of backends()) {
  describe(`executions on ${backend.name}: the outcome survives a dropped connection`, () => {
    let svc: TestService;
    let merchant: TestMerchant;
    let key: { authorization: string };
    let agent: ReturnType<typeof newAgent>;
    let permit: string;
    before(async () => {
      merchant = await startMerchant();
      svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url) });
      key = await svc.keyHeader([]);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      agent = newAgent();
      permit = (await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] })).jws;
    });
    after(() => stopBoth(svc, merchant));

    for (const when of ['before', 'after'] as const) {
      test(`the connection drops ${when} the outcome commits: SUCCEEDED, recorded once, no late outcome`, async () => {
        const executions = svc.deps.executions;
        let dropped = false;
        const writer = new Proxy(svc.deps.writer, {
          get(target, prop, receiver) {
            if (prop !== 'call') { const v = Reflect.get(target, prop, receiver); return typeof v === 'function' ? v.bind(target) : v; }
            return async (name: string, args: unknown) => {
              if (name === 'executions.record' && !dropped) {
                dropped = true;
                if (when === 'after') await (target.call as (n: string, a: unknown) => Promise<unknown>)(name, args);
                throw new Error('Connection terminated unexpectedly');
              }
              return (target.call as (n: string, a: unknown) => Promise<unknown>)(name, args);
            };
          },
        });
        (svc.deps as { executions: unknown }).executions = new Executions({ store: svc.ts.store, writer, merchants: svc.deps.merchants, instanceId: executions.instanceId, now: () => new Date() });
        try {
          const nonce = randomUUID();
          const res = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: {
            agent: agent.did, permit, action: 'pay', resource: 'resource://shop/1', amount: { minor: 500, currency: 'EUR' }, execution: { merchant: 'shop', operation: 'ok', payload: {}, nonce } } });
          assert.equal(res.statusCode, 200, res.body);
          assert.equal(dropped, true, res.body);
          assert.deepEqual([res.json().decision, res.json().execution?.status], ['ALLOW', 'SUCCEEDED']);
          assert.equal(merchant.calls.get(nonce), 1);
          const row = await svc.ts.store.db.selectFrom('executions').select(['status']).where('id', '=', res.json().execution.id).executeTakeFirstOrThrow();
          assert.equal(row.status, 'SUCCEEDED');
          const kinds = (await svc.ts.store.db.selectFrom('audit_events').select('kind').where('data', 'like', `%${res.json().execution.id}%`).execute()).map((r) => r.kind).sort();
          assert.deepEqual(kinds, ['execution.outcome', 'execution.started']);
        } finally { (svc.deps as { executions: unknown }).executions = executions; }
      });
    }
  });
}
