// One public key registered by two requests at once (a double-submitted form). A registration takes
// the project's roles lock, so the second waits for the first to commit and then meets its key on the
// unique index. Only PostgreSQL interleaves them; SQLite's writers take turns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { holdTable } from '../support/hold-table.ts';
import { ed25519Pair } from '../support/approvals.ts';

const postgres = backends().find((b) => b.name === 'postgres');

test('a key registered twice at once: one 201, the other 409 approval_key_exists, one audit event', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const svc = await startService(postgres!);
  try {
    const approver = await consoleMember(svc, ['APPROVER']);
    const pair = ed25519Pair();
    const register = () => svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/principals/${approver.principalId}/approval-keys`,
      headers: approver.post, payload: JSON.stringify({ public_key: pair.publicKey }) });
    // Reads of approval_keys pass, writes wait: one request waits at its insert, the other for the roles lock it holds.
    const held = await holdTable(process.env.GAVEL_TEST_DATABASE_URL!, (svc.ts.options as { schema: string }).schema, 'approval_keys', 'exclusive');
    const both = Promise.all([register(), register()]);
    await held.reached('insert into "approval_keys"%');
    await held.reached('select pg_advisory_xact_lock%');
    await held.release();
    const answers = await both;
    assert.deepEqual(answers.map((r) => r.statusCode).sort(), [201, 409], answers.map((r) => r.body).join('\n'));
    assert.equal(answers.find((r) => r.statusCode === 409)!.json().code, 'approval_key_exists');
    const events = await svc.ts.store.db.selectFrom('audit_events').select('data').where('kind', '=', 'approval_key.registered').execute();
    assert.equal(events.filter((e) => JSON.parse(e.data).public_key === pair.publicKey).length, 1);
  } finally {
    await svc.stop();
  }
});
