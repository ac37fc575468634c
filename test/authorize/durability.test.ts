// Invariant 1: no ALLOW leaves the service before its audit event is durable. A real server is
// killed with SIGKILL under load; every ALLOW a client received must have its audit event. Half
// the load spends a budget (the transaction path), half does not (the one-statement path), and
// what was spent must be exactly what the recorded ALLOWs spent: no spend without its event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { databaseUrl, prepareForChildren, spawnGavel } from '../support/process.ts';
import { openStore } from '../../src/store/store.ts';
import { recordedDecisions } from '../support/decisions.ts';

const SPEND = 100;

for (const backend of backends()) {
  test(`kill -9 under load on ${backend.name}: every ALLOW received has its audit event`, async () => {
    const { svc, agent, jws, key, budget } = await prepareForChildren(backend);

    const gavel = await spawnGavel({ GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options) });
    const received: string[] = [];
    let spends = 0;
    let stop = false;
    const plain = { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' };
    const spending = { agent: agent.did, permit: budget.jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: SPEND, currency: 'EUR' } };
    const worker = async (payload: object) => {
      while (!stop) {
        try {
          const res = await fetch(`${gavel.url}/v1/authorize`, {
            method: 'POST', headers: { ...key, 'content-type': 'application/json' }, body: JSON.stringify(payload),
          });
          if (res.status !== 200) continue;
          const body = await res.json() as { decision: string; audit_id: string };
          if (body.decision !== 'ALLOW') continue;
          received.push(body.audit_id);
          if (payload === spending) spends++;
        } catch { return; /* the server died mid-request: no answer was received */ }
      }
    };
    const workers = Array.from({ length: 16 }, (_, i) => worker(i % 2 ? spending : plain));
    // Let the load run until a few hundred decisions of each kind were answered, then kill without warning.
    while (received.length - spends < 300 || spends < 300) await new Promise((r) => setTimeout(r, 20));
    await gavel.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);

    const store = openStore(svc.ts.options);
    try {
      const ids = new Set((await store.db.selectFrom('audit_events').select('id').where('kind', '=', 'decision').execute()).map((r) => r.id));
      const missing = received.filter((id) => !ids.has(id));
      assert.ok(received.length >= 600);
      assert.deepEqual(missing, [], `${missing.length} of ${received.length} ALLOW answers have no audit event`);
      // The budget's counter moved with the recorded decisions and only with them (a spend and its
      // event commit together or not at all), and at least every spend a client was told of.
      const allowedSpends = (await recordedDecisions(store.db)).filter((d) => d.permit_commitment === budget.commitment && d.decision === 'ALLOW').length;
      const usage = await store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', budget.commitment).executeTakeFirstOrThrow();
      assert.ok(allowedSpends >= spends, `${allowedSpends} recorded against ${spends} received`);
      assert.deepEqual([Number(usage.spent_minor), Number(usage.uses)], [allowedSpends * SPEND, allowedSpends]);
    } finally {
      await store.close();
      await svc.ts.cleanup();
    }
  });
}
