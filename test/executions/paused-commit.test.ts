// An instance paused (SIGSTOP: a VM paused, a long stall) after sending the COMMIT of a decision that
// reserves an execution, resumed once another instance has taken it for dead and marked the
// reservation UNKNOWN, but before its reply timeout: it must not then call the merchant (a person
// may have resolved the UNKNOWN as FAILED, and the agent retried under a new nonce). It did, once
// the COMMIT's answer came (multi-instance audit, session 53): now a call is sent only while this
// instance's newest heartbeat began less than half the staleness window ago (InstanceKeeper.fresh). A person
// reading UNKNOWN "the process making this call stopped mid-call" may resolve it FAILED (the merchant
// has no record of it) and the agent retry under a new nonce; a call sent after that is a second
// payment for one intent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { databaseUrl, prepareForChildren, spawnGavel } from '../support/process.ts';
import { openStore } from '../../src/store/store.ts';
import { newMember } from '../support/service.ts';

const pg = backends().find((b) => b.name === 'postgres');

test('a call is not sent for a reservation another instance already marked UNKNOWN', { skip: !pg && 'PostgreSQL not configured', timeout: 240_000 }, async () => {
  const calls: { key: string; at: number }[] = [];
  const merchant = createServer((req, res) => { req.resume(); req.on('end', () => { calls.push({ key: String(req.headers['idempotency-key']), at: Date.now() }); res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'); }); });
  await new Promise<void>((r) => merchant.listen(0, '127.0.0.1', r));
  const merchantPort = (merchant.address() as AddressInfo).port;
  const file = join(mkdtempSync(join(tmpdir(), 'probe-merchants-')), 'merchants.json');
  writeFileSync(file, JSON.stringify({ merchants: { shop: { base_url: `http://127.0.0.1:${merchantPort}/api`, secret: 'probe-merchant-secret-0123456789', timeout_ms: 5000, operations: { ok: { method: 'POST', path: '/ok' } } } } }));
  const { svc, agent, jws, key } = await prepareForChildren(pg!, { merchantsFile: file });
  const store = openStore(svc.ts.options);
  const env = { GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options), GAVEL_MERCHANTS_FILE: file };
  // A's reply timeout well past the pause: the COMMIT's answer is read on waking, not given up on.
  const a = await spawnGavel({ ...env, GAVEL_DATABASE_REPLY_TIMEOUT_MS: '120000' });
  const b = await spawnGavel(env);
  try {
    // The reservation's COMMIT takes a few seconds at the server (a deferred trigger standing in for
    // a slow fsync or a synchronous standby), long enough to pause the process while it waits.
    await sql.raw(`create function probe_slow_commit() returns trigger language plpgsql as $$ begin perform pg_sleep(3); return null; end $$;
      create constraint trigger probe_slow_commit after insert on executions deferrable initially deferred for each row execute function probe_slow_commit()`).execute(store.db);
    await sleep(3_000); // both instances beating
    const nonce = randomUUID();
    const answer = fetch(`${a.url}/v1/authorize`, { method: 'POST', headers: { ...key, 'content-type': 'application/json' },
      body: JSON.stringify({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a', execution: { merchant: 'shop', operation: 'ok', payload: {}, nonce } }) })
      .then(async (r) => ({ status: r.status, body: await r.json() as { decision?: string; execution?: { id: string; status: string } } }));
    // A's COMMIT is running at the server: pause A.
    for (let i = 0; i < 100; i++) {
      const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'active' and query ilike 'commit%'`.execute(store.db);
      if (r.rows[0]!.n > 0) break;
      await sleep(50);
    }
    a.child.kill('SIGSTOP');
    const pausedAt = Date.now();
    // B takes A for dead and marks the reservation UNKNOWN (~12 s after A's last beat).
    let status = '';
    for (let i = 0; i < 250 && status !== 'UNKNOWN'; i++) {
      await sleep(100);
      status = (await store.db.selectFrom('executions').select('status').where('nonce', '=', nonce).executeTakeFirst())?.status ?? '';
    }
    assert.equal(status, 'UNKNOWN', 'B marked the paused instance\'s reservation UNKNOWN');
    console.log('marked UNKNOWN after ms', Date.now() - pausedAt);
    // A person asks the merchant, which has no record of the call, and resolves it FAILED (the agent
    // would now retry under a new nonce).
    const person = await newMember(store, svc.projectId, ['ADMIN'], 'operator', 'person');
    const id = (await store.db.selectFrom('executions').select('id').where('nonce', '=', nonce).executeTakeFirstOrThrow()).id;
    const resolved = await fetch(`${b.url}/v1/projects/${svc.projectId}/executions/resolve`, { method: 'POST',
      headers: { authorization: `Bearer ${person.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ execution_id: id, outcome: 'FAILED', note: 'the merchant has no record of this call' }) });
    assert.equal(resolved.status, 200, await resolved.text());
    assert.equal(calls.length, 0, 'nothing was sent before the resolution');
    // Resumed before its reply timeout gave up on the COMMIT.
    a.child.kill('SIGCONT');
    const res = await answer;
    await sleep(2_000);
    console.log('A answered', JSON.stringify(res), 'merchant calls', JSON.stringify(calls));
    const kinds = (await store.db.selectFrom('audit_events').select(['kind', 'data']).where('kind', 'like', 'execution.%').execute()).map((e) => `${e.kind} ${e.data}`);
    console.log(kinds.join('\n'));
    assert.equal(calls.filter((c) => c.key === nonce).length, 0, 'the merchant was called for an execution already marked UNKNOWN ("the process stopped mid-call") and resolved FAILED');
  } finally {
    a.child.kill('SIGCONT');
    await a.kill('SIGKILL'); await b.kill('SIGKILL');
    await sql.raw('drop trigger if exists probe_slow_commit on executions').execute(store.db).catch(() => {});
    await store.close(); await svc.ts.cleanup();
    await new Promise((r) => merchant.close(r));
  }
});
