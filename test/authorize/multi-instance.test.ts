// Invariants 3 and 5 across instances: two Gavel processes on one PostgreSQL never overspend a
// budget; and a freeze committed while a decision is in flight denies that decision, on every path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, delegate as delegateTo, issue, newAgent } from '../support/authorize.ts';
import { permitCommitment } from '../../src/domain/permit/index.ts';
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
// a plain decision commits as one statement (decision 0012), and one that spends (or presents a
// delegated permit) takes the transaction with the cached key, whose agent lock is taken in
// recheck.ts (CHECKED_AT_COMMIT). Each must wait for a freeze held open by another connection and
// see it: the agent's own, or (a delegated permit) its delegator's, read FOR SHARE too.
const PATHS = ['the transaction', 'one statement', 'the transaction, key cached', "a delegator's freeze"] as const;
for (const path of PATHS) test(`a freeze committed while a decision is in flight denies that decision (PostgreSQL, ${path})`, { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  try {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const key = await svc.keyHeader([]);
    const agent = newAgent();
    const decide = (payload: Record<string, unknown>) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: key, payload }).then((r) => r.json() as Promise<{ decision: string; reason_code: string; detail?: string }>);
    let payload: Record<string, unknown>;
    let frozen = agent.did;
    if (path === 'the transaction, key cached') {
      const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 10_000, currency: 'EUR' } });
      payload = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } };
    } else if (path === "a delegator's freeze") {
      const delegate = newAgent();
      const root = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      payload = { agent: delegate.did, permit: await delegateTo(root.jws, agent, delegate.did, { actions: ['read'], resources: ['resource://docs/*'] }), action: 'read', resource: 'resource://docs/a' };
      frozen = agent.did;
    } else {
      const { jws } = await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] });
      payload = { agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' };
    }
    // Warm the key, the permit and the agents' rows, as a busy agent's would be (not for the first path).
    if (path !== 'the transaction') assert.equal((await decide(payload)).decision, 'ALLOW');
    const other = svc.ts.reopen();
    let inFlight: Promise<{ decision: string; reason_code: string; detail?: string }> | undefined;
    await other.transaction(async (trx) => {
      await freezeAgent(trx, { projectId: svc.projectId, did: frozen, actor: 'system', reason: 'race', at: new Date().toISOString() });
      // The decision starts while the freeze is not yet committed: its permit and policy checks
      // pass; it must then wait for the freeze and see it inside its own commit.
      inFlight = decide(payload);
      await new Promise((r) => setTimeout(r, 300));
    });
    const decided = await inFlight!;
    assert.deepEqual([decided.decision, decided.reason_code], ['DENY', 'agent_frozen'], JSON.stringify(decided));
    if (path === "a delegator's freeze") assert.match(decided.detail ?? '', /delegated by/);
    if (path === 'the transaction, key cached') {
      const usage = await svc.ts.store.db.selectFrom('permit_usage').selectAll().where('commitment', '=', permitCommitment(payload.permit as string)).executeTakeFirstOrThrow();
      assert.deepEqual([Number(usage.spent_minor), Number(usage.uses)], [100, 1], 'only the warm-up spent');
    }
  } finally { await svc.stop(); }
});
