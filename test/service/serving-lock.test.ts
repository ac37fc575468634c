// One serving process per SQLite database: a second `gavel serve` on the same data directory stops
// before it recovers anything (it would have marked the first one's calls in flight UNKNOWN), and a
// restart after kill -9 is not refused (the OS drops the lock with the process).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { backends } from '../support/backends.ts';
import { spawn } from 'node:child_process';
import { MAIN, prepareForChildren, spawnGavel } from '../support/process.ts';
import { merchantsFile, startMerchant } from '../support/merchant.ts';
import { stopBoth } from '../support/payments.ts';
import { openStore } from '../../src/store/store.ts';

const sqlite = backends().find((b) => b.name === 'sqlite')!;

test('a second server on the same SQLite database is refused before it touches the calls in flight; a restart after kill -9 is not', async () => {
  const merchant = await startMerchant({ slowMs: 1_500 });
  const { svc, agent, jws, key, env } = await prepareForChildren(sqlite, { merchantsFile: merchantsFile(merchant.url, 10_000) });
  const first = await spawnGavel(env);
  try {
    const call = fetch(`${first.url}/v1/authorize`, {
      method: 'POST', headers: { ...key, 'content-type': 'application/json' },
      body: JSON.stringify({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a', execution: { merchant: 'shop', operation: 'slow', payload: {}, nonce: randomUUID() } }),
    }).then(async (r) => (await r.json()) as { execution?: { status: string } });
    await merchant.waitForCalls(1);
    await assert.rejects(spawnGavel(env), /another Gavel process is serving/);
    // `gavel up` too, before it starts a local witness on the same files: one line, no stack trace.
    // Not spawnSync: the merchant answers the first server's call from this process's event loop;
    // blocked while a loaded machine's start is slow to refuse, it let that call reach its timeout, UNKNOWN.
    const up = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN, 'up'], { env: { ...process.env, ...env, GAVEL_PORT: '0', GAVEL_WITNESS_PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
      child.on('close', (status) => resolve({ status, stderr }));
    });
    assert.equal(up.status, 2, up.stderr);
    assert.match(up.stderr, /^gavel: another Gavel process is serving .*\n$/);
    assert.equal((await call).execution?.status, 'SUCCEEDED', 'the first server\'s call was left alone');
    const store = openStore(svc.ts.options);
    try {
      const kinds = (await store.db.selectFrom('audit_events').select('kind').where('kind', 'like', 'execution.%').execute()).map((e) => e.kind);
      assert.ok(!kinds.includes('execution.unknown'), kinds.join(', '));
    } finally { await store.close(); }

    await first.kill('SIGKILL');
    const again = await spawnGavel(env);
    await again.kill('SIGTERM');
  } finally {
    await first.kill('SIGKILL');
    await stopBoth(svc, merchant);
  }
});
