// A log restored from an older copy no longer reaches the checkpoint its witness holds, and the
// witness will never cosign it again. The service says so from its start, before any new event:
// the dashboard's witness problem and the proofs waiting on a checkpoint, while /readyz stays ready
// (decision 0652, addendum). Putting the right copy back and starting again clears it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import type { TestService } from '../support/service.ts';
import { sql } from 'kysely';
import { openRollback } from '../../src/services/auditlog/continuity.ts';
import { sequencePending } from '../../src/services/auditlog/sequencer.ts';
import { CONTINUITY_CHECK_MS } from '../../src/services/auditlog/runner.ts';
import { databaseUrl, spawnGavel } from '../support/process.ts';
import { addEvents, clockedAuditLog, emptyLog, restoreUnderLeader, restartAuditService, restoreLog, snapshotLog, startAuditService } from './support.ts';

/** What the service says of its log: the console dashboard's audit_log and /readyz. */
async function status(svc: TestService, member: ConsoleMember) {
  const dashboard = await svc.app.inject({ method: 'GET', url: `/v1/console/projects/${svc.projectId}/dashboard`, headers: member.get });
  assert.equal(dashboard.statusCode, 200, dashboard.body);
  const ready = await svc.app.inject({ method: 'GET', url: '/readyz' });
  return { log: dashboard.json().audit_log, ready: { status: ready.statusCode, body: ready.json() } };
}

const proof = (svc: TestService, key: { authorization: string }, id: string) =>
  svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/audit/${id}/proof`, headers: key });

/** An auditor's session and an API key, made before the log is copied (each is an audit event of its own). */
const callers = async (svc: TestService) => ({ member: await consoleMember(svc, ['AUDITOR']), key: await svc.keyHeader([]) });

/**
 * Two events checkpointed, the log copied as 'older', three more checkpointed, the service closed:
 * the size of the checkpoint the older copy falls short of.
 */
async function olderCopyThenSigned(a: Awaited<ReturnType<typeof startAuditService>>): Promise<number> {
  const { store } = a.svc.ts;
  await addEvents(store, a.svc.projectId, 2);
  await a.svc.auditLog.tick({ force: true });
  await snapshotLog(store, 'older');
  await addEvents(store, a.svc.projectId, 3);
  const signed = (await a.svc.auditLog.tick({ force: true })).checkpoint!;
  await a.svc.close();
  return signed;
}

for (const backend of backends()) {
  test(`a log restored from an older copy is noticed at start, before any new event, and cleared once the right copy is back (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    try {
      const { member, key } = await callers(a.svc);
      const kept = await addEvents(store, a.svc.projectId, 3);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      await snapshotLog(store, 'older');
      const lost = await addEvents(store, a.svc.projectId, 3);
      const held = await a.svc.auditLog.tick({ force: true });
      assert.equal(held.witness?.kind, 'cosigned');
      const heldSize = held.checkpoint!;
      await a.svc.close();
      await snapshotLog(store, 'newest');

      // The older copy restored; the witness holds the newer checkpoint.
      await restoreLog(store, 'older');
      const b = await restartAuditService(a);
      try {
        const at = await status(b, member);
        assert.equal(at.log.witness_problem?.kind, 'rolled_back', JSON.stringify(at.log));
        assert.match(at.log.witness_problem.reason, new RegExp(`the witness holds a checkpoint of size ${heldSize}, larger than the log`));
        // An integrity alarm, not an outage: readiness says the database answers (decision 0652, addendum).
        assert.equal(at.ready.status, 200, JSON.stringify(at.ready.body));
        // What the witness cosigned before the copy was taken still proves; what was lost is gone.
        assert.equal((await proof(b, key, kept[0]!)).statusCode, 200);
        const gone = await proof(b, key, lost[0]!);
        assert.equal(gone.statusCode, 404);
        // Said as what it may be: an event the restored copy lost (decision 0652, addendum).
        assert.match(gone.json().detail, /the log was rolled back since .*: an event it lost is not found either/);

        // New events: their checkpoint is refused, and their proofs say why and that waiting will not help.
        const [fresh] = await addEvents(store, b.projectId, 1);
        assert.equal((await b.auditLog.tick({ force: true })).witness?.kind, 'rolled_back');
        const waiting = await proof(b, key, fresh!);
        assert.equal(waiting.statusCode, 409, waiting.body);
        assert.equal(waiting.json().code, 'proof_not_ready');
        assert.match(waiting.json().detail, /none will until the log is put right.*rolled_back: the witness holds a checkpoint/);
        assert.equal(waiting.headers['retry-after'], '30');
        // Past the witness's size the history differs (a fork, 422): still a rollback.
        await addEvents(store, b.projectId, heldSize);
        assert.equal((await b.auditLog.tick({ force: true })).witness?.kind, 'rolled_back');
        const forked = await status(b, member);
        assert.equal(forked.log.witness_problem?.kind, 'rolled_back');
        assert.match(forked.log.witness_problem.reason, /history was replaced/);
        assert.equal(forked.ready.status, 200);
      } finally { await b.stop(); }

      // The newest copy of the log put back (the problem's record kept, as rows copied back would
      // leave it): the next start finds the log and the witness agreeing, and is ready.
      await restoreLog(store, 'newest', ['audit_events', 'audit_nodes', 'audit_log_state', 'audit_checkpoints']);
      const c = await restartAuditService(a);
      try {
        const after = await status(c, member);
        assert.equal(after.log.witness_problem, null, JSON.stringify(after.log));
        assert.equal(after.ready.status, 200);
        assert.equal((await proof(c, key, lost[0]!)).statusCode, 200);
      } finally { await c.stop(); }
    } finally { await a.stop(); }
  });

  test(`a log restored to size 0 (every event and checkpoint gone) is noticed at start, and a lost event's 404 says so (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    try {
      const { member, key } = await callers(a.svc);
      const lost = await addEvents(store, a.svc.projectId, 3);
      const held = await a.svc.auditLog.tick({ force: true });
      assert.equal(held.witness?.kind, 'cosigned');
      await a.svc.close();
      await emptyLog(store);
      const b = await restartAuditService(a);
      try {
        const at = await status(b, member);
        assert.equal(at.log.witness_problem?.kind, 'rolled_back', JSON.stringify(at.log));
        assert.match(at.log.witness_problem.reason, new RegExp(`the witness holds a checkpoint of size ${held.checkpoint}, larger than the log`));
        assert.equal(at.ready.status, 200);
        const gone = await proof(b, key, lost[0]!);
        assert.equal(gone.statusCode, 404);
        assert.match(gone.json().detail, /^no audit event \S+ in this project; the log was rolled back since .*the witness holds a checkpoint of size/);
        const verify = await b.app.inject({ method: 'POST', url: `/v1/console/projects/${b.projectId}/proofs/verify`, headers: member.post, payload: { audit_event_id: lost[0] } });
        assert.equal(verify.statusCode, 404, verify.body);
        assert.match(verify.json().detail, /the log was rolled back since/);
      } finally { await b.stop(); }
    } finally { await a.stop(); }
  });

  test(`a log shorter than a checkpoint it signed itself (rows deleted, checkpoints kept) is noticed at start, with no witness to ask (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    const { store } = a.svc.ts;
    try {
      const { member } = await callers(a.svc);
      const signed = await olderCopyThenSigned(a);
      // The events and the tree from the older copy, the checkpoints as they were.
      await restoreLog(store, 'older', ['audit_events', 'audit_nodes', 'audit_log_state']);
      const b = await restartAuditService(a);
      try {
        const at = await status(b, member);
        assert.equal(at.log.witness_problem?.kind, 'rolled_back', JSON.stringify(at.log));
        assert.match(at.log.witness_problem.reason, new RegExp(`the log signed a checkpoint of size ${signed} on .* and holds fewer events now`));
        assert.equal(at.ready.status, 200);
      } finally { await b.stop(); }
    } finally { await a.stop(); }
  });

  test(`a log whose history was replaced under its checkpoint, or that lacks a node under it, is noticed at start with no witness to ask (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    const { store } = a.svc.ts;
    try {
      const { member } = await callers(a.svc);
      const signed = await olderCopyThenSigned(a);
      await snapshotLog(store, 'newest');
      // The older copy, then other events written past the checkpoint's size: as long, not the same history.
      await restoreLog(store, 'older', ['audit_events', 'audit_nodes', 'audit_log_state']);
      await addEvents(store, a.svc.projectId, 4, 'test.other');
      await sequencePending(store);
      const b = await restartAuditService(a);
      try {
        const at = await status(b, member);
        assert.equal(at.log.witness_problem?.kind, 'rolled_back', JSON.stringify(at.log));
        assert.match(at.log.witness_problem.reason, new RegExp(`first ${signed} events no longer hash to the root of its checkpoint`));
      } finally { await b.stop(); }
      // The newest copy back, less the node at the top of the checkpoint's tree.
      await restoreLog(store, 'newest');
      await sql`delete from audit_nodes where level = (select max(level) from audit_nodes)`.execute(store.db);
      const c = await restartAuditService(a);
      try {
        const at = await status(c, member);
        assert.equal(at.log.witness_problem?.kind, 'rolled_back', JSON.stringify(at.log));
        assert.match(at.log.witness_problem.reason, new RegExp(`lacks a node under its checkpoint of size ${signed}`));
      } finally { await c.stop(); }
    } finally { await a.stop(); }
  });

  test(`a checkpoint row whose root column was altered is named as such at start, not taken for a replaced history (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    const { store } = a.svc.ts;
    try {
      const { member } = await callers(a.svc);
      await addEvents(store, a.svc.projectId, 5);
      const signed = (await a.svc.auditLog.tick({ force: true })).checkpoint!;
      await a.svc.close();
      await store.db.updateTable('audit_checkpoints').set({ root: new Uint8Array(32).fill(0xab) }).where('size', '=', signed).execute();
      const b = await restartAuditService(a);
      try {
        const at = await status(b, member);
        assert.equal(at.log.witness_problem?.kind, 'rolled_back', JSON.stringify(at.log));
        assert.match(at.log.witness_problem.reason, new RegExp(`does not match its signed text \\(size ${signed}\\): the checkpoint's row was altered`));
        assert.doesNotMatch(at.log.witness_problem.reason, /history was replaced/);
      } finally { await b.stop(); }
    } finally { await a.stop(); }
  });

  test(`a restart of an intact log finds nothing wrong and is ready (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    try {
      const { member } = await callers(a.svc);
      await addEvents(a.svc.ts.store, a.svc.projectId, 3);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      await a.svc.close();
      const b = await restartAuditService(a);
      try {
        assert.equal((await b.auditLog.tick()).continuity, undefined, 'checked at start, not every tick');
        const at = await status(b, member);
        assert.equal(at.log.witness_problem, null);
        assert.equal(at.ready.status, 200);
      } finally { await b.stop(); }
    } finally { await a.stop(); }
  });

  test(`checkpoints lost but events kept is no rollback: the start signs a checkpoint the witness cosigns (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    try {
      const { member } = await callers(a.svc);
      await addEvents(store, a.svc.projectId, 2);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      await snapshotLog(store, 'older');
      await addEvents(store, a.svc.projectId, 2);
      const held = (await a.svc.auditLog.tick({ force: true })).checkpoint;
      await a.svc.close();
      await restoreLog(store, 'older', ['audit_checkpoints']);
      const b = await restartAuditService(a);
      try {
        const at = await status(b, member);
        assert.equal(at.log.witness_problem, null, JSON.stringify(at.log));
        assert.equal(at.log.witnessed_size, held, 'the witness cosigned the log at the size it holds');
        assert.equal(at.ready.status, 200);
      } finally { await b.stop(); }
    } finally { await a.stop(); }
  });

  test(`a leader finds a restore made under it within a minute, with no new event (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    let clock = Date.now();
    const runner = clockedAuditLog(a, () => clock);
    try {
      await restoreUnderLeader(a, runner);
      assert.equal((await runner.tick()).continuity, undefined, 'not asked again before the minute is out');
      assert.equal(await openRollback(store.db), null);
      clock += CONTINUITY_CHECK_MS;
      assert.equal((await runner.tick()).continuity?.kind, 'rolled_back');
      assert.match((await openRollback(store.db))?.reason ?? '', /the witness holds a checkpoint of size \d+, larger than the log/);
    } finally {
      await runner.stop();
      await a.stop();
    }
  });
}

for (const backend of backends()) {
  test(`gavel serve on a rolled-back log says so in its start banner (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'none');
    const { store } = a.svc.ts;
    try {
      const signed = await olderCopyThenSigned(a);
      await restoreLog(store, 'older', ['audit_events', 'audit_nodes', 'audit_log_state']);
      const server = await spawnGavel({ GAVEL_DATA_DIR: a.svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(a.svc.ts.options) });
      try {
        const banner = server.lines.join('\n');
        assert.match(banner, new RegExp(`^Warning: the audit log was rolled back \\(found .*\\): the log signed a checkpoint of size ${signed} on .* and holds fewer events now \\(a restore from an older copy, or deleted rows\\)\\.$`, 'm'));
        assert.match(banner, /restore the newest copy of the database/);
      } finally { await server.kill('SIGTERM'); }
    } finally { await a.stop(); }
  });
}
