// docs/permits.md's delegation example, run as written (its key file's path aside) by an agent
// holding a real permit: the chain it prints is one the service allows the delegate to use, and a
// parent limit the link leaves out makes it throw, as the page says, rather than print a chain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { activatePolicy, issue, newAgent, type Agent } from '../support/authorize.ts';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { codeBlocks } from '../support/walkthroughs.ts';

const example = codeBlocks('docs/permits.md').find((b) => b.includes('delegatePermit(process.env.PERMIT'));
// The document docs/policy-language.md opens with: payments.create up to 50.00 EUR is ALLOW.
const policy = JSON.parse(/```json\n([\s\S]*?)```/.exec(readFileSync('docs/policy-language.md', 'utf8'))![1]!);

/** Runs the page's example as `holder`, from the repository's directory, as the page says. */
function delegateAsThePageSays(holder: Agent, permit: string, delegate: string) {
  assert.ok(example, 'docs/permits.md shows the delegation example');
  const keyFile = join(mkdtempSync(join(tmpdir(), 'gavel-agent-')), 'agent-key.pem');
  writeFileSync(keyFile, holder.privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  const code = example.replace(`'agent-key.pem'`, JSON.stringify(keyFile));
  return spawnSync(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, PERMIT: permit, DELEGATE: delegate }, encoding: 'utf8' });
}

for (const backend of backends()) {
  test(`docs/permits.md: the delegation example makes a chain the delegate is allowed with, and refuses to widen (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      await activatePolicy(svc, policy);
      const [holder, delegate] = [newAgent(), newAgent()];
      const root = await issue(svc, holder.did, { actions: ['payments.create'], resources: ['resource://payments/*'], budget: { minor: 10_000, currency: 'EUR' } });
      const run = delegateAsThePageSays(holder, root.jws, delegate.did);
      assert.equal(run.status, 0, run.stderr);
      const chain = run.stdout.trim();
      assert.equal(chain.split('~').length, 2);
      const answer = await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: await svc.keyHeader([]), payload: {
        agent: delegate.did, permit: chain, action: 'payments.create', resource: 'resource://payments/eu/7', amount: { minor: 1000, currency: 'EUR' },
      } });
      assert.deepEqual([answer.json().decision, answer.json().reason_code], ['ALLOW', 'policy_allow'], answer.body);

      const counted = await issue(svc, holder.did, { actions: ['payments.create'], resources: ['resource://payments/*'], max_uses: 5 });
      const widened = delegateAsThePageSays(holder, counted.jws, delegate.did);
      assert.notEqual(widened.status, 0);
      assert.match(widened.stderr, /delegation_widened|max_uses/);
      assert.equal(widened.stdout, '');
    } finally { await svc.stop(); }
  });
}
