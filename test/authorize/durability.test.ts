// Invariant 1: no ALLOW leaves the service before its audit event is durable. A real server is
// killed with SIGKILL under load; every ALLOW a client received must have its audit event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { databaseUrl, prepareForChildren, spawnGavel } from '../support/process.ts';
import { openStore } from '../../src/store/store.ts';

for (const backend of backends()) {
  test(`kill -9 under load on ${backend.name}: every ALLOW received has its audit event`, async () => {
    const { svc, agent, jws, key } = await prepareForChildren(backend);

    const gavel = await spawnGavel({ GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options) });
    const received: string[] = [];
    let stop = false;
    const worker = async () => {
      while (!stop) {
        try {
          const res = await fetch(`${gavel.url}/v1/authorize`, {
            method: 'POST', headers: { ...key, 'content-type': 'application/json' },
            body: JSON.stringify({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' }),
          });
          if (res.status !== 200) continue;
          const body = await res.json() as { decision: string; audit_id: string };
          if (body.decision === 'ALLOW') received.push(body.audit_id);
        } catch { return; /* the server died mid-request: no answer was received */ }
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    // Let the load run until a few hundred decisions were answered, then kill without warning.
    while (received.length < 300) await new Promise((r) => setTimeout(r, 20));
    await gavel.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);

    const store = openStore(svc.ts.options);
    try {
      const ids = new Set((await store.db.selectFrom('audit_events').select('id').where('kind', '=', 'decision').execute()).map((r) => r.id));
      const missing = received.filter((id) => !ids.has(id));
      assert.ok(received.length >= 300);
      assert.deepEqual(missing, [], `${missing.length} of ${received.length} ALLOW answers have no audit event`);
    } finally {
      await store.close();
      await svc.ts.cleanup();
    }
  });
}
