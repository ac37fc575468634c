// GAVEL_SHUTDOWN_DRAIN_MS: on a stop, /readyz fails first while every request is still served (new
// connections too), so that a load balancer stops sending requests before the listener closes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { backends } from '../support/backends.ts';
import { prepareForChildren, spawnGavel } from '../support/process.ts';

for (const b of backends()) {
  test(`a stop with a drain on ${b.name}: /readyz 503 shutting_down, decisions still served on new connections; a second signal ends the drain: exit 0`, async () => {
    const { svc, agent, jws, key, env } = await prepareForChildren(b);
    const gavel = await spawnGavel({ ...env, GAVEL_SHUTDOWN_DRAIN_MS: '300000', GAVEL_LOG_LEVEL: 'info' });
    try {
      const ready = await fetch(`${gavel.url}/readyz`);
      assert.equal(ready.status, 200);
      await ready.arrayBuffer();
      const exited = once(gavel.child, 'exit');
      gavel.child.kill('SIGTERM');
      let readyz: Response | undefined;
      for (let i = 0; i < 200; i++) {
        readyz = await fetch(`${gavel.url}/readyz`);
        if (readyz.status === 503) break;
        await readyz.arrayBuffer();
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.equal(readyz!.status, 503);
      assert.equal(readyz!.headers.get('retry-after'), '1');
      assert.equal(((await readyz!.json()) as { code: string }).code, 'shutting_down');
      // Fresh connections, not only kept-alive ones: the listener is still open.
      const decision = await fetch(`${gavel.url}/v1/authorize`, {
        method: 'POST', headers: { ...key, 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ agent: agent.did, permit: jws, action: 'read', resource: 'resource://docs/a' }),
      });
      assert.equal(decision.status, 200);
      assert.equal(((await decision.json()) as { decision: string }).decision, 'ALLOW');
      const health = await fetch(`${gavel.url}/healthz`, { headers: { connection: 'close' } });
      assert.equal(health.status, 200);
      await health.arrayBuffer();
      assert.ok(gavel.lines.some((l) => l.includes('GAVEL_SHUTDOWN_DRAIN_MS')), 'the drain is logged');
      // Five minutes of drain are left; a second signal ends them.
      gavel.child.kill('SIGTERM');
      assert.deepEqual(await exited, [0, null]);
    } finally {
      await gavel.kill('SIGKILL');
      await svc.ts.cleanup();
    }
  });
}

test('a drain that runs its course closes the listener and exits 0', async () => {
  const { svc, env } = await prepareForChildren(backends()[0]!);
  const gavel = await spawnGavel({ ...env, GAVEL_SHUTDOWN_DRAIN_MS: '200' });
  try {
    const exited = once(gavel.child, 'exit');
    gavel.child.kill('SIGTERM');
    assert.deepEqual(await exited, [0, null]);
    await assert.rejects(fetch(`${gavel.url}/healthz`), 'the listener is closed');
  } finally {
    await gavel.kill('SIGKILL');
    await svc.ts.cleanup();
  }
});
