// Invariants 3 and 5 across instances: two Gavel processes on one PostgreSQL never overspend a
// budget; and a freeze committed while a decision is in flight denies that decision.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { databaseUrl, spawnGavel } from '../support/process.ts';
import { freezeAgent } from '../../src/services/agents/agents.ts';

const pg = backends().find((b) => b.name === 'postgres');

test('two Gavel processes on PostgreSQL: a budget admitting exactly k is never overspent', { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  try {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const agent = newAgent();
    const k = 11;
    const { jws, commitment } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: k * 250, currency: 'EUR' } });
    const key = await svc.keyHeader([]);
    const env = { GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options) };
    const [a, b] = await Promise.all([spawnGavel(env), spawnGavel(env)]);
    try {
      const results = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
        const res = await fetch(`${(i % 2 ? a : b).url}/v1/authorize`, {
          method: 'POST', headers: { ...key, 'content-type': 'application/json' },
          body: JSON.stringify({ agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 250, currency: 'EUR' } }),
        });
        assert.equal(res.status, 200);
        return (await res.json() as { decision: string }).decision;
      }));
      assert.equal(results.filter((d) => d === 'ALLOW').length, k);
      const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', commitment).executeTakeFirstOrThrow();
      assert.equal(usage.spent_minor, k * 250);
    } finally {
      await Promise.all([a.kill(), b.kill()]);
    }
  } finally { await svc.stop(); }
});

// The key's first decision looks the key up and takes the transaction; once its context is cached,
// a plain decision commits as one statement (decision 0012). Both must see the freeze.
for (const path of ['the transaction', 'one statement'] as const) test(`a freeze committed while a decision is in flight denies that decision (PostgreSQL, ${path})`, { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  try {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const agent = newAgent();
    const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
    const key = await svc.keyHeader([]);
    if (path === 'one statement') {
      const warm = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' } });
      assert.equal(warm.json().decision, 'ALLOW');
    }
    const other = svc.ts.reopen();
    let inFlight: Promise<{ decision: string; reason_code: string }> | undefined;
    await other.transaction(async (trx) => {
      await freezeAgent(trx, { projectId: svc.projectId, did: agent.did, actor: 'system', reason: 'race', at: new Date().toISOString() });
      // The decision starts while the freeze is not yet committed: its permit and policy checks
      // pass; it must then wait for the freeze and see it inside its own commit.
      inFlight = svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload: { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' } }).then((r) => r.json());
      await new Promise((r) => setTimeout(r, 300));
    });
    const decided = await inFlight!;
    assert.equal(decided.decision, 'DENY');
    assert.equal(decided.reason_code, 'agent_frozen');
  } finally { await svc.stop(); }
});
