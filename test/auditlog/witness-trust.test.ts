// A checkpoint is marked witnessed only when the witness's answer carries a cosignature the pinned
// key verifies: junk lines, or a valid cosignature by another key, are not stored, and the service
// says so in its log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends } from '../support/backends.ts';
import { startWitness, type RunningWitness } from '../../src/witness/server.ts';
import { logIdentity } from '../../src/services/auditlog/log.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { startService } from '../support/service.ts';
import { addEvents, startAuditService } from './support.ts';

for (const backend of backends()) {
  test(`a witness answer is stored only with a cosignature by the pinned key (${backend.name})`, async () => {
    // A witness that says 200 to everything, with a line shaped like a cosignature.
    const fake = createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(200).end('— localhost/gavel-witness AAAAAAAAAAAAAAAAAAAAAAAA\n')); });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const fakeUrl = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
    // The pinned key is a real witness's; the answers come from the fake, then from a witness with another key.
    const dirs = [mkdtempSync(join(tmpdir(), 'gavel-w1-')), mkdtempSync(join(tmpdir(), 'gavel-w2-'))];
    const pinned = await startWitness({ dataDir: dirs[0]!, logs: [] });
    const a = await startAuditService(backend, 'none', { witnessUrl: fakeUrl, witnessVkey: pinned.publicKeyVkey });
    try {
      await addEvents(a.svc.ts.store, a.svc.projectId, 3);
      const junk = await a.svc.auditLog.tick({ force: true });
      assert.equal(junk.witness?.kind, 'invalid_cosignature');
      const witnessed = async () => (await a.svc.ts.store.db.selectFrom('audit_checkpoints').select(['size', 'witnessed_at']).where('witnessed_at', 'is not', null).execute()).length;
      assert.equal(await witnessed(), 0, 'no checkpoint is marked witnessed');

    } finally {
      await a.stop();
      await pinned.close();
      await new Promise((resolve) => fake.close(resolve));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });

  test(`a genuine witness of this log whose key is not the pinned one is not trusted (${backend.name})`, async () => {
    const dirs = [mkdtempSync(join(tmpdir(), 'gavel-w1-')), mkdtempSync(join(tmpdir(), 'gavel-w2-'))];
    const pinned = await startWitness({ dataDir: dirs[0]!, logs: [] });
    let other: RunningWitness | undefined;
    const svc = await startService(backend, { auditTickMs: 60_000, checkpointIntervalMs: 60_000 }, async (ts) => {
      const id = await logIdentity(ts.store, new LocalSigner(join(ts.dataDir, 'keys')));
      other = await startWitness({ dataDir: dirs[1]!, logs: [{ origin: id.origin, vkeys: [id.vkey] }] });
      return { witnessUrl: other.url, witnessVkey: pinned.publicKeyVkey };
    });
    try {
      await addEvents(svc.ts.store, svc.projectId, 2);
      const r = await svc.auditLog.tick({ force: true });
      assert.equal(r.witness?.kind, 'invalid_cosignature', JSON.stringify(r.witness));
      const witnessed = await svc.ts.store.db.selectFrom('audit_checkpoints').select('size').where('witnessed_at', 'is not', null).execute();
      assert.deepEqual(witnessed, []);
    } finally {
      await svc.stop();
      await other?.close();
      await pinned.close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });
}

test('a witness that does not cosign is logged: a refusal as an error, an outage as a warning, each outcome at most once a minute', async () => {
  const { witnessProblemLog } = await import('../../src/service.ts');
  const lines: [string, string][] = [];
  const log = { warn: (o: { outcome: { kind: string } }) => lines.push(['warn', o.outcome.kind]), error: (o: { outcome: { kind: string } }) => lines.push(['error', o.outcome.kind]) };
  const report = witnessProblemLog({ log } as never, 'http://127.0.0.1:1');
  for (let i = 0; i < 10; i++) report({ kind: 'unavailable', reason: 'connect ECONNREFUSED' });
  report({ kind: 'invalid_cosignature', reason: 'no cosignature by w' });
  report({ kind: 'refused', reason: 'fork' });
  report({ kind: 'refused', reason: 'fork' });
  assert.deepEqual(lines, [['warn', 'unavailable'], ['error', 'invalid_cosignature'], ['error', 'refused']]);
});

test('a failing pass of the audit log loop is logged once a minute while it fails the same way, another failure at once', async () => {
  const { tickFailureLog } = await import('../../src/service.ts');
  const lines: { message: string; repeated?: number }[] = [];
  const log = { error: (o: { err: Error; repeated?: number }) => lines.push({ message: o.err.message, ...(o.repeated ? { repeated: o.repeated } : {}) }) };
  let clock = 0;
  const failed = tickFailureLog({ log } as never, () => clock);
  for (let i = 0; i < 601; i++) { failed(new Error('connect ECONNREFUSED')); clock += 100; }
  failed(new Error('missing node 3/0'));
  failed(new Error('missing node 3/0'));
  assert.deepEqual(lines, [{ message: 'connect ECONNREFUSED' }, { message: 'connect ECONNREFUSED', repeated: 599 }, { message: 'missing node 3/0' }]);
});

test('the once-a-minute logs are timed on the monotonic clock: a wall clock stepped forward does not repeat a line', async () => {
  const { tickFailureLog, witnessProblemLog } = await import('../../src/service.ts');
  const lines: string[] = [];
  const log = { error: (_o: unknown, m: string) => lines.push(m), warn: (_o: unknown, m: string) => lines.push(m) };
  const failed = tickFailureLog({ log } as never);
  const report = witnessProblemLog({ log } as never, 'http://127.0.0.1:1');
  const wall = Date.now;
  try {
    failed(new Error('connect ECONNREFUSED'));
    report({ kind: 'unavailable', reason: 'connect ECONNREFUSED' });
    Date.now = () => wall() + 3_600_000;
    failed(new Error('connect ECONNREFUSED'));
    report({ kind: 'unavailable', reason: 'connect ECONNREFUSED' });
  } finally { Date.now = wall; }
  // Timed by Date.now, a step back would have silenced them for as long as the step.
  assert.deepEqual(lines, ['audit log tick failed', 'the witness did not cosign the latest checkpoint']);
});
