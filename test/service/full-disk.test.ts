// A database whose disk is full (SQLite SQLITE_FULL, PostgreSQL 53100 disk_full): a write that
// fails for want of space is 503 storage_full and keeps nothing, /readyz says not ready while
// writes fail so, and once space returns the same process writes and is ready again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { fillDisk, freeDisk, FULL_DISK_WRITER } from '../support/full-disk.ts';
import { merchantsFile, startMerchant } from '../support/merchant.ts';

/** A policy too large to fit in the pages a database has left: saving it must grow the database. */
const LARGE_POLICY = {
  ...ALLOW_PAYMENTS,
  rules: [...ALLOW_PAYMENTS.rules, ...Array.from({ length: 80 }, (_, i) => ({ id: `never-${i}`, effect: 'DENY', when: { op: 'eq', input: 'action', value: `never-${i}-${'x'.repeat(40)}` } }))],
};

for (const backend of backends()) {
  test(`a full disk on ${backend.name}: 503 storage_full, nothing kept, not ready; recovered without a restart`, async () => {
    const merchant = await startMerchant();
    const svc = await startService(backend, { merchantsFile: merchantsFile(merchant.url, 5_000) }, undefined, { writerExecArgv: FULL_DISK_WRITER });
    // Logged once for the whole episode, and once when it ends (service.ts).
    const changes: boolean[] = [];
    const log = svc.ts.store.space.onChange;
    svc.ts.store.space.onChange = (full, error) => { changes.push(full); log(full, error); };
    try {
      const key = await svc.keyHeader([]);
      const author = await svc.keyHeader(['POLICY_AUTHOR']);
      await activatePolicy(svc, ALLOW_PAYMENTS);
      const agent = newAgent();
      const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      const authorize = () => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' } });
      const ready = () => svc.app.inject({ method: 'GET', url: '/readyz' });
      const count = async (table: 'audit_events' | 'policy_versions' | 'executions') => Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(svc.ts.store.db)).rows[0]!.n);
      const full = (res: Awaited<ReturnType<typeof authorize>>, what: string) => {
        assert.deepEqual([res.statusCode, res.json().code], [503, 'storage_full'], `${what}: ${res.body}`);
        assert.match(res.json().detail, /disk is full/, what);
        assert.ok(Number(res.headers['retry-after']) > 0, `${what}: retry-after`);
      };

      assert.equal((await authorize()).json().decision, 'ALLOW');
      assert.equal((await ready()).statusCode, 200);
      await fillDisk(svc.ts.store);

      // On SQLite small events fill the pages the database already has before one needs another.
      let refused: Awaited<ReturnType<typeof authorize>> | undefined;
      for (let i = 0; i < 200 && !refused; i++) {
        const before = await count('audit_events');
        const res = await authorize();
        if (res.statusCode === 200) { assert.equal(res.json().decision, 'ALLOW'); continue; }
        refused = res;
        assert.equal(await count('audit_events'), before, 'the refused decision left an event');
      }
      full(refused!, 'the first decision refused');
      const events = await count('audit_events');
      full(await authorize(), 'the next decision');
      // An execution whose decision could not be recorded is not started: no call, no row.
      const executions = await count('executions');
      full(await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a', execution: { merchant: 'shop', operation: 'ok', payload: {}, nonce: 'full-disk-1' } } }), 'an execution');
      assert.deepEqual([merchant.totalCalls(), await count('executions')], [0, executions]);
      const versions = await count('policy_versions');
      full(await svc.app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/policy`, headers: author, payload: { policy: LARGE_POLICY, note: 'big' } }), 'saving a policy');
      assert.deepEqual([await count('audit_events'), await count('policy_versions')], [events, versions], 'something of the refused writes was kept');

      const notReady = await ready();
      assert.deepEqual([notReady.statusCode, notReady.json().code], [503, 'not_ready'], notReady.body);
      assert.match(notReady.json().detail, /disk is full/);

      await freeDisk(svc.ts.store);
      const after = await authorize();
      assert.equal(after.json().decision, 'ALLOW', after.body);
      assert.equal((await ready()).statusCode, 200);
      const saved = await svc.app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/policy`, headers: author, payload: { policy: LARGE_POLICY, note: 'big' } });
      assert.equal(saved.statusCode, 201, saved.body);
      // The log took the decision made after recovery: it has its proof.
      await svc.auditLog.tick({ force: true });
      const proof = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/audit/${after.json().audit_id}/proof`, headers: key });
      assert.equal(proof.statusCode, 200, proof.body);
      assert.deepEqual(changes, [true, false]);
    } finally { try { await svc.stop(); } finally { await merchant.close(); } }
  });
}

const postgres = backends().find((b) => b.name === 'postgres');

test('checkpoints that fail for want of space mark the disk full once, not an error line at every tick (PostgreSQL)', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  // A checkpoint due at every tick; on SQLite one fits in a page the capped database has, so only PostgreSQL's trigger refuses it.
  const svc = await startService(postgres!, { auditTickMs: 20, checkpointIntervalMs: 10 });
  const changes: boolean[] = [];
  svc.ts.store.space.onChange = (full) => changes.push(full);
  try {
    const key = await svc.keyHeader([]);
    await fillDisk(svc.ts.store, ['audit_checkpoints']);
    // An event to put under a checkpoint (only the checkpoints' table cannot grow).
    await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: newAgent().did, permit: 'x', action: 'read', resource: 'resource://docs/a' } });
    // Its commit clears a mark an earlier checkpoint's refusal set: counted from here. (A refusal
    // may also land while the decision commits, before this line: the mark then stands, unannounced again.)
    changes.length = 0;
    // Refused at the next tick that finds a checkpoint due, then at every tick after it.
    for (let waited = 0; !svc.ts.store.space.marked && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const notReady = await svc.app.inject({ method: 'GET', url: '/readyz' });
    assert.deepEqual([notReady.statusCode, notReady.json().code], [503, 'not_ready'], notReady.body);
    // Over 15 ticks and more, each refused: announced once at most, never cleared.
    assert.ok(changes.length <= 1 && !changes.includes(false), JSON.stringify(changes));
    await freeDisk(svc.ts.store, ['audit_checkpoints']);
    await svc.auditLog.tick();
    assert.ok((await svc.ts.store.db.selectFrom('audit_checkpoints').select('size').execute()).length > 0);
  } finally { await svc.stop(); }
});
