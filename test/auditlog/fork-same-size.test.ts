// A log whose history was replaced and written again to exactly the size its witness holds (an older
// copy restored, or a second signer with the log's key): the witness answers 409 naming that very
// size (C2SP tlog-witness: same size, another root), which is a fork, as a 422 is past it; never a
// passing conflict that a retry could settle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { sequencePending } from '../../src/services/auditlog/sequencer.ts';
import { addEvents, restartAuditService, restoreLog, snapshotLog, startAuditService } from './support.ts';

for (const backend of backends()) {
  test(`a history replaced up to the size the witness holds is recorded as rolled back, and its proofs say so (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const { store } = a.svc.ts;
    try {
      const member = await consoleMember(a.svc, ['AUDITOR']);
      const key = await a.svc.keyHeader([]);
      await addEvents(store, a.svc.projectId, 2);
      assert.equal((await a.svc.auditLog.tick({ force: true })).witness?.kind, 'cosigned');
      await snapshotLog(store, 'older');
      await addEvents(store, a.svc.projectId, 3);
      const held = await a.svc.auditLog.tick({ force: true });
      assert.equal(held.witness?.kind, 'cosigned');
      await a.svc.close();

      // The older copy, written again with other events up to the witness's size.
      await restoreLog(store, 'older');
      const forked = await addEvents(store, a.svc.projectId, 3, 'test.other');
      await sequencePending(store);
      const b = await restartAuditService(a);
      try {
        assert.equal((await b.auditLog.tick({ force: true })).witness?.kind, 'rolled_back');
        const dashboard = await b.app.inject({ method: 'GET', url: `/v1/console/projects/${b.projectId}/dashboard`, headers: member.get });
        const problem = dashboard.json().audit_log.witness_problem;
        assert.equal(problem?.kind, 'rolled_back', JSON.stringify(problem));
        assert.match(problem.reason, new RegExp(`holds a checkpoint of size ${held.checkpoint} with another root`));
        const waiting = await b.app.inject({ method: 'GET', url: `/v1/projects/${b.projectId}/audit/${forked[2]}/proof`, headers: key });
        assert.equal(waiting.statusCode, 409, waiting.body);
        assert.match(waiting.json().detail, /none will until the log is put right/);
      } finally { await b.stop(); }
    } finally { await a.stop(); }
  });
}
