// An agent holding a permit may delegate it to itself offline as often as it likes: every chain it
// signs is distinct and valid, and a valid chain is cached by its presented text. A chain of 16 KB
// (the most a permit may be) kept with its verified result costs some 45 KB of heap, so the 10,000
// entries the cache kept by count alone grew past 400 MB for one API key and one permit. The cache
// is bounded by the characters it holds too (8 Mi, some 25 MB with the results); a chain it no
// longer holds is only verified again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, delegate, issue, newAgent } from '../support/authorize.ts';
import { databaseUrl, spawnGavel, type GavelProcess } from '../support/process.ts';
import { MAX_PRESENTED_LENGTH } from '../../src/domain/permit/index.ts';

/** 16 KB chains that held some 65 MB of heap had each stayed cached (30 KB or more each). */
const CHAINS = 2_000;
const HEAP_PROBE = ['--expose-gc', '--import', new URL('../support/heap-probe.ts', import.meta.url).pathname];

/** The server's heap in use after a full collection (test/support/heap-probe.ts). */
async function heapOf(gavel: GavelProcess): Promise<number> {
  const seen = gavel.lines.length;
  gavel.child.kill('SIGUSR2');
  for (;;) {
    const line = gavel.lines.slice(seen).find((l) => l.startsWith('heap-probe '));
    if (line) return Number(line.slice('heap-probe '.length));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
const CONCURRENCY = 8;

for (const backend of backends()) {
  test(`${backend.name}: ${CHAINS} distinct 16 KB delegation chains of one permit leave the server's heap less than 35 MB larger`, async () => {
    const svc = await startService(backend);
    const agent = newAgent();
    const resources = Array.from({ length: 10 }, (_, i) => `resource://docs/${'x'.repeat(70)}${i}/*`);
    const grant = { actions: ['read'], resources };
    let chain = (await issue(svc, agent.did, grant)).jws;
    for (let i = 0; i < 6; i++) chain = await delegate(chain, agent, agent.did, grant);
    const key = await svc.keyHeader([]);
    await activatePolicy(svc, ALLOW_PAYMENTS);
    await svc.close();
    await svc.ts.store.close();
    const gavel = await spawnGavel({ GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options) }, { nodeArgs: HEAP_PROBE });
    const decide = async (permit: string): Promise<string> => {
      const res = await fetch(`${gavel.url}/v1/authorize`, {
        method: 'POST', headers: { ...key, 'content-type': 'application/json' },
        body: JSON.stringify({ agent: agent.did, permit, action: 'read', resource: `resource://docs/${'x'.repeat(70)}1/a` }),
      });
      const body = await res.text();
      assert.equal(res.status, 200, body);
      return (JSON.parse(body) as { decision: string }).decision;
    };
    try {
      // Warmed up first (code loaded, the policy compiled, the key and the chain's links cached).
      for (let i = 0; i < 50; i++) assert.equal(await decide(chain), 'ALLOW');
      const before = await heapOf(gavel);
      let next = 0;
      const decisions: string[] = [];
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        while (next < CHAINS) {
          next++;
          const permit = await delegate(chain, agent, agent.did, grant);
          assert.ok(permit.length > MAX_PRESENTED_LENGTH - 512, `a chain of ${permit.length} characters`);
          decisions.push(await decide(permit));
        }
      }));
      assert.deepEqual(new Set(decisions), new Set(['ALLOW']));
      const grown = (await heapOf(gavel)) - before;
      assert.ok(grown < 35e6, `the heap grew by ${Math.round(grown / 1e6)} MB`);
    } finally {
      await gavel.kill();
      await svc.ts.cleanup();
    }
  });
}
