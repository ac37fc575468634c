// A stored separation-of-duties document that no longer validates (it was validated when saved:
// only a damaged database or a faulty migration gets here) fails closed. It fell back to the
// default, whose four-eyes activation is off: a project that had turned four eyes on lost it
// without a word, and a policy author could activate alone. An ADMIN's PUT replaces the document.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { ALLOW_PAYMENTS } from '../support/authorize.ts';

for (const backend of backends()) {
  describe(`a stored SoD document that no longer validates (${backend.name})`, () => {
    let svc: TestService;
    before(async () => { svc = await startService(backend); });
    after(async () => { await svc.stop(); });

    test('reads, activations and role grants are refused, not decided under the default; a PUT mends it', async () => {
      const admin = await svc.keyHeader(['ADMIN']);
      const author = await svc.keyHeader(['POLICY_AUTHOR']);
      const P = `/v1/projects/${svc.projectId}`;
      const saved = await svc.app.inject({ method: 'PUT', url: `${P}/policy`, headers: author, payload: { policy: ALLOW_PAYMENTS, note: 'test' } });
      assert.equal(saved.statusCode, 201, saved.body);
      // Four eyes was on; the stored text is then damaged.
      const on = await svc.app.inject({ method: 'PUT', url: `${P}/sod`, headers: admin, payload: { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: true } });
      assert.equal(on.statusCode, 200, on.body);
      await svc.ts.store.db.updateTable('sod_settings').set({ document: '{"exclusive_roles":"damaged","four_eyes_policy_activation":true}' }).where('project_id', '=', svc.projectId).execute();

      const read = await svc.app.inject({ method: 'GET', url: `${P}/sod`, headers: admin });
      assert.equal(read.statusCode, 500, read.body);
      const activated = await svc.app.inject({ method: 'POST', url: `${P}/policy/activate`, headers: author, payload: { version: saved.json().version } });
      assert.equal(activated.statusCode, 500, `an author alone must not activate under a four-eyes rule that could not be read: ${activated.body}`);
      assert.equal((await svc.ts.store.db.selectFrom('policy_versions').select('state').where('version', '=', saved.json().version).executeTakeFirstOrThrow()).state, 'saved');

      // The ADMIN replaces it; the audit event keeps the damaged text as it was.
      const mended = await svc.app.inject({ method: 'PUT', url: `${P}/sod`, headers: admin, payload: { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: true } });
      assert.equal(mended.statusCode, 200, mended.body);
      const event = await svc.ts.store.db.selectFrom('audit_events').select('data').where('kind', '=', 'sod.updated').orderBy('seq', 'desc').executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(event.data).before, { unreadable: '{"exclusive_roles":"damaged","four_eyes_policy_activation":true}' });
      assert.equal((await svc.app.inject({ method: 'GET', url: `${P}/sod`, headers: admin })).json().document.four_eyes_policy_activation, true);
      const alone = await svc.app.inject({ method: 'POST', url: `${P}/policy/activate`, headers: author, payload: { version: saved.json().version } });
      assert.equal(alone.statusCode, 403, alone.body);
      assert.equal(alone.json().code, 'four_eyes_required');
    });
  });
}
