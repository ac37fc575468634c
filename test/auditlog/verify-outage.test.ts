// Verifying an event's proof while the database drops the connection: the verdict INVALID says the
// log was tampered with, so an outage must not give it. The answer is 503 database_unavailable,
// and the same verification succeeds once the database is back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { relayed } from '../support/tcp-proxy.ts';
import { cutAt } from '../support/hold-table.ts';
import { consoleMember } from '../support/console.ts';
import { newAgent } from '../support/authorize.ts';

const postgres = backends().find((b) => b.name === 'postgres');

test('a connection dropped while a proof is read is 503, not INVALID', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const r = relayed(postgres!);
  const svc = await startService(r.backend);
  try {
    const key = await svc.keyHeader(['ADMIN']);
    for (let i = 0; i < 4; i++) {
      const res = await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent: newAgent().did } });
      assert.equal(res.statusCode, 200, res.body);
    }
    await svc.auditLog.tick({ force: true });
    await svc.auditLog.stop(); // only the verification reads the tree from here on
    const auditor = await consoleMember(svc, ['AUDITOR']);
    const { id } = await svc.ts.store.db.selectFrom('audit_events').select('id').where('kind', '=', 'agent.frozen').orderBy('seq').executeTakeFirstOrThrow();
    const verify = () => svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/proofs/verify`, headers: auditor.post, payload: { audit_event_id: id } });
    assert.equal((await verify()).json().evidence?.local_proof, 'valid');

    const res = await cutAt(r.relay(), (svc.ts.options as { schema: string }).schema, 'audit_nodes', 'select level, idx, hash from audit_nodes%', verify);
    assert.deepEqual([res.statusCode, res.json().code], [503, 'database_unavailable'], res.body);

    const again = await verify();
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().evidence.local_proof, 'valid');
  } finally { r.relay().restore(); await svc.stop(); }
});
