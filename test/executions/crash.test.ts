// A process that dies mid-call (kill -9 while 50 executions wait on a merchant that never
// answers): after a restart every one of them is UNKNOWN (audited, with a note saying the
// process stopped), none was sent twice, and the same nonces are REPLAY (invariants 2 and 6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { databaseUrl, prepareForChildren, spawnGavel } from '../support/process.ts';
import { merchantsFile, startMerchant } from '../support/merchant.ts';
import { openStore } from '../../src/store/store.ts';
import { STOPPED_NOTE } from '../../src/services/executions/recovery.ts';

for (const backend of backends()) {
  test(`kill -9 with 50 executions in flight on ${backend.name}: all UNKNOWN after restart, none sent twice`, async () => {
    const merchant = await startMerchant();
    const file = merchantsFile(merchant.url, 60_000);
    const { svc, agent, jws, key } = await prepareForChildren(backend, { merchantsFile: file });

    const env = { GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options), GAVEL_MERCHANTS_FILE: file };
    const nonces = Array.from({ length: 50 }, () => randomUUID());
    const send = (url: string, nonce: string) => fetch(`${url}/v1/authorize`, {
      method: 'POST', headers: { ...key, 'content-type': 'application/json' },
      body: JSON.stringify({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a', execution: { merchant: 'shop', operation: 'hang', payload: {}, nonce } }),
    });
    const first = await spawnGavel(env);
    const pending = nonces.map((n) => send(first.url, n).then(() => 'answered', () => 'no answer'));
    await merchant.waitForCalls(50);
    await first.kill('SIGKILL');
    assert.deepEqual(new Set(await Promise.all(pending)), new Set(['no answer']));

    const second = await spawnGavel({ ...env, GAVEL_LOG_LEVEL: 'warn' });
    const store = openStore(svc.ts.options);
    try {
      if (backend.name === 'sqlite') {
        // One process serves a SQLite file: the new one marks the dead one's calls before it serves.
        const inFlight = await store.db.selectFrom('executions').select('id').where('status', '=', 'IN_FLIGHT').execute();
        assert.deepEqual(inFlight, [], 'on SQLite the calls are UNKNOWN by the time the restarted process serves');
      }
      // SQLite: the new process marks them at start. PostgreSQL: once the dead instance's heartbeat
      // is stale and the new one has beaten for a staleness window (~12 s after its start).
      let rows: { status: string; note: string | null; id: string }[] = [];
      for (let i = 0; i < 600; i++) {
        rows = await store.db.selectFrom('executions').select(['id', 'status', 'note']).execute();
        if (rows.every((r) => r.status !== 'IN_FLIGHT')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(rows.length, 50);
      for (const r of rows) {
        assert.equal(r.status, 'UNKNOWN');
        assert.equal(r.note, STOPPED_NOTE);
      }
      const audited = await store.db.selectFrom('audit_events').select('id').where('kind', '=', 'execution.unknown').execute();
      assert.equal(audited.length, 50);
      // The operator is told how many wait for a person, whichever sweep found them (on PostgreSQL one after start).
      const told = () => second.lines.filter((l) => l.includes('now UNKNOWN; resolve them')).reduce((n, l) => n + (JSON.parse(l) as { executions: number }).executions, 0);
      for (let i = 0; i < 100 && told() < 50; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(told(), 50, 'the warning counts every execution marked UNKNOWN');
      for (const n of nonces) {
        const res = await send(second.url, n);
        assert.equal(res.status, 200);
        const body = await res.json() as { decision: string; execution: { status: string } };
        assert.equal(body.decision, 'REPLAY');
        assert.equal(body.execution.status, 'UNKNOWN');
      }
      for (const n of nonces) assert.equal(merchant.calls.get(n), 1, `nonce ${n} was sent ${merchant.calls.get(n)} times`);
      assert.equal(merchant.totalCalls(), 50);
    } finally {
      await second.kill();
      await store.close();
      await merchant.close();
      await svc.ts.cleanup();
    }
  });
}
