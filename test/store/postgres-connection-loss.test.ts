// A PostgreSQL connection that drops (a restart, a failover, a proxy in between) must not take the
// process down: the audit log's leader gives up its lock and takes it again, and requests keep
// being answered. Requests that met the outage are 503 database_unavailable, not 500.
import { test } from 'node:test';
import { Writable } from 'node:stream';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { toProblem } from '../../src/http/errors.ts';
import { relayed } from '../support/tcp-proxy.ts';

const pg = backends().find((b) => b.name === 'postgres');

test('the audit log leader\'s connection terminated: the process lives on, and leads again', { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  try {
    assert.equal((await svc.auditLog.tick()).leader, true);
    const schema = (svc.ts.options as { schema?: string }).schema!;
    // Every connection of this service's pool (named by its schema), the leader's held one among them.
    const killed = await sql<{ n: number }>`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
      where application_name = ${`gavel/${schema}`} and pid <> pg_backend_pid()`.execute(svc.ts.reopen().db);
    assert.ok(killed.rows[0]!.n >= 1, 'the leader connection was terminated');
    await new Promise((r) => setTimeout(r, 200));
    // Without an error listener on checked-out clients, the process would have died above.
    let leader = false;
    for (let i = 0; i < 5 && !leader; i++) leader = (await svc.auditLog.tick().catch(() => ({ leader: false }))).leader;
    assert.equal(leader, true, 'the lock was given up and taken again');
    const res = await svc.app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(res.statusCode, 200, res.body);
  } finally { await svc.stop(); }
});

test('an unreachable database is 503 database_unavailable with retry-after, not 500', () => {
  for (const error of [
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5999'), { code: 'ECONNREFUSED' }),
    new Error('Connection terminated unexpectedly'),
    Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    Object.assign(new Error('connection failure'), { code: '08006' }),
  ]) {
    const p = toProblem(error as never);
    assert.deepEqual([p.status, p.code, p.headers?.['retry-after']], [503, 'database_unavailable', '1'], error.message);
  }
  assert.equal(toProblem(new Error('a bug') as never).status, 500);
});

test('a database outage is logged once, not once for every request and readiness probe it refuses, and its end once', { skip: !pg && 'PostgreSQL not configured' }, async () => {
  // Every log line the service writes at warn or above (a restart of PostgreSQL, seen as this instance sees it: connections reset, new ones refused).
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } });
  const r = relayed(pg!);
  const svc = await startService(r.backend, {}, undefined, { logger: { level: 'warn', stream } });
  try {
    const headers = await svc.keyHeader(['AUDITOR']);
    r.relay().cut();
    for (let i = 0; i < 20; i++) {
      const res = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/sod`, headers });
      assert.deepEqual([res.statusCode, res.json().code], [503, 'database_unavailable'], res.body);
      assert.equal((await svc.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 503);
    }
    // The audit log's loop fails too, and logs that once a minute itself (tickFailureLog).
    const requestLines = lines.filter((l) => l.level >= 40 && l.msg !== 'audit log tick failed');
    assert.equal(requestLines.length, 1, JSON.stringify(requestLines.map((l) => l.msg)));
    r.relay().restore();
    let res;
    for (let i = 0; i < 50 && (res = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/sod`, headers })).statusCode !== 200; i++) await new Promise((done) => setTimeout(done, 100));
    assert.equal(res!.statusCode, 200, res!.body);
    // Its end is logged once, whether or not requests come: the service asks the database itself.
    const again = () => lines.filter((l) => l.msg.startsWith('the database answers again'));
    for (let i = 0; i < 50 && again().length === 0; i++) await new Promise((done) => setTimeout(done, 100));
    assert.equal(again().length, 1, JSON.stringify(lines.map((l) => l.msg)));
    assert.equal(again()[0]!.level, 40);
    assert.ok((again()[0] as unknown as { failures: number }).failures >= 40, JSON.stringify(again()[0]));
    await new Promise((done) => setTimeout(done, 1_500));
    assert.equal(again().length, 1, 'said once');
  } finally { r.relay().restore(); await svc.stop(); }
});
