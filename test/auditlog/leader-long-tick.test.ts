// The audit log leader's lease (idle_session_timeout on its lock's connection, decision 0651) must
// expire only for a leader that stopped talking to the database, not for a healthy one whose tick
// takes longer than the lease: a backlog of hundreds of thousands of events is up to 1,600 batches in
// one tick, during which the lock's connection sat idle and the server closed it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { startAuditLog } from '../../src/services/auditlog/runner.ts';
import { LocalSigner } from '../../src/signer/local.ts';

const pg = backends().find((b) => b.name === 'postgres');

test('a leader whose tick outlasts its lease keeps the lock', { skip: !pg && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(pg!);
  const a = svc.ts.reopen();
  const signer = new LocalSigner(`${svc.ts.dataDir}/keys`);
  await svc.auditLog.stop(); // the service's own runner stays out of the election
  let slow = true;
  let began!: () => void;
  const sequencing = new Promise<void>((resolve) => { began = resolve; });
  // A long sequencing batch (a backlog), three times the lease, on the pool's other connections.
  const sequence = async () => { if (slow) { slow = false; began(); await sleep(3_000); } return { count: 0, size: 0, root: new Uint8Array(32) }; };
  const runner = startAuditLog(a, signer, { tickMs: 1e9, intervalMs: 1000, maxEvents: 1000, witness: undefined, leaderIdleTimeoutMs: 1000, sequence });
  try {
    // The runner's first tick starts at once: it takes the lock, then sequences for 3 s. Waiting for
    // the sequencing to begin, not a fixed while: on a busy machine taking the lock took longer.
    await sequencing;
    assert.equal(runner.isLeader(), true, 'the first tick took the lock');
    // Chained after that tick: the leader checks its lock's connection first.
    assert.equal((await runner.tick()).leader, true, 'the leader lost its lock to its own long tick');
  } finally { await runner.stop(); await svc.stop(); }
});
