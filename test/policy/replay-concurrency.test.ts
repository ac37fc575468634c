// Replays one instance runs at once (services/policy/replay.ts, RUNNING_REPLAYS_MAX). Each holds
// its window (up to 10,000 events, parsed) while it evaluates and yields every few ms, so replays
// asked together held all their windows at once: sixteen from one AUDITOR key ran the served 256 MB
// heap out and the process died, every decision in flight with it (unbounded-growth audit, session 53).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { databaseUrl, spawnGavel } from '../support/process.ts';
import { replayPolicy, RUNNING_REPLAYS_MAX } from '../../src/services/policy/replay.ts';
import { Problem } from '../../src/http/problem.ts';

for (const backend of backends()) {
  test(`a replay asked while ${RUNNING_REPLAYS_MAX} run is refused 503 busy with Retry-After; a turn is given back however a replay ends (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const version = await activatePolicy(svc, ALLOW_PAYMENTS);
      const { db } = svc.ts.store;
      const replay = (v = version) => replayPolicy(db, svc.projectId, { version: v, last: 10 });
      // Asked together: each takes its turn before its first read.
      const asked = Array.from({ length: RUNNING_REPLAYS_MAX + 1 }, () => replay());
      const settled = await Promise.allSettled(asked);
      assert.deepEqual(settled.slice(0, RUNNING_REPLAYS_MAX).map((s) => s.status), Array(RUNNING_REPLAYS_MAX).fill('fulfilled'));
      const refused = settled[RUNNING_REPLAYS_MAX]!;
      assert.equal(refused.status, 'rejected');
      const problem = (refused as PromiseRejectedResult).reason as Problem;
      assert.ok(problem instanceof Problem);
      assert.equal(problem.status, 503);
      assert.equal(problem.code, 'busy');
      assert.equal(problem.headers?.['retry-after'], '1');
      // A replay that fails (no such version) gives its turn back, as one that succeeds does.
      const failed = await Promise.allSettled([replay(9_999), replay(9_999)]);
      assert.deepEqual(failed.map((s) => ((s as PromiseRejectedResult).reason as Problem).code), ['policy_version_not_found', 'policy_version_not_found']);
      const after = await Promise.allSettled([replay(), replay()]);
      assert.deepEqual(after.map((s) => s.status), ['fulfilled', 'fulfilled']);
      // An invalid window is answered as such, whatever runs.
      const both = replay();
      await assert.rejects(replayPolicy(db, svc.projectId, { last: 10 }), (e: Problem) => e.status === 400);
      await both;
    } finally { await svc.stop(); }
  });
}

const DECISIONS = 10_000;
const REPLAYS = 64;

test(`${REPLAYS} replays of ${DECISIONS} decisions at once from an AUDITOR key are each answered (200, or 503 busy) and the server, under its launch lines' heap, stays up (sqlite)`, async () => {
  const backend = backends()[0]!;
  const svc = await startService(backend);
  const agent = newAgent();
  const version = await activatePolicy(svc, ALLOW_PAYMENTS);
  const key = await svc.keyHeader([]);
  const auditor = await svc.keyHeader(['AUDITOR']);
  const permit = (await issue(svc, agent.did, { actions: ['read'], resources: ['resource://docs/*'] })).jws;
  const projectId = svc.projectId;
  await svc.close();
  await svc.ts.store.close();
  const gavel = await spawnGavel({ GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(svc.ts.options) }, { nodeArgs: ['--max-semi-space-size=16', '--max-old-space-size=256'] });
  const json = { 'content-type': 'application/json' };
  try {
    let next = 0;
    // Decisions as large as a request makes them: a 512-character resource, a 128-character intent.
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < DECISIONS) {
        const i = next++;
        const res = await fetch(`${gavel.url}/v1/authorize`, { method: 'POST', headers: { ...json, ...key }, body: JSON.stringify({ agent: agent.did, permit, action: 'read', resource: `resource://docs/${String(i).padStart(8, '0')}/${'r'.repeat(480)}`, intent: 'i'.repeat(128) }) });
        assert.equal(res.status, 200, await res.text());
      }
    }));
    const answers = await Promise.all(Array.from({ length: REPLAYS }, () => fetch(`${gavel.url}/v1/projects/${projectId}/policy/replay`, { method: 'POST', headers: { ...json, ...auditor }, body: JSON.stringify({ version, last: DECISIONS }) })
      .then(async (r) => `${r.status} ${r.status === 200 ? (await r.json() as { considered: number }).considered : (await r.json() as { code: string }).code}`, (e: Error) => `no answer: ${(e.cause as { code?: string } | undefined)?.code ?? e.message}`)));
    const counts: Record<string, number> = {};
    for (const a of answers) counts[a] = (counts[a] ?? 0) + 1;
    assert.deepEqual(Object.keys(counts).filter((a) => a !== `200 ${DECISIONS}` && a !== '503 busy'), [], `answers: ${JSON.stringify(counts)}`);
    assert.ok((counts[`200 ${DECISIONS}`] ?? 0) >= 1, `answers: ${JSON.stringify(counts)}`);
    assert.equal(gavel.child.signalCode, null);
    assert.equal(gavel.child.exitCode, null);
  } finally {
    await gavel.kill();
    await svc.ts.cleanup();
  }
});
