// The compiled-policy cache counts the characters of the documents it holds (active.ts): a version
// compiled twice at once (two decisions or replays missing the cache together) is held and counted once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { compiledCacheChars, compiledCacheSize, compiledVersion } from '../../src/services/policy/active.ts';

for (const backend of backends()) {
  test(`one version compiled twice at once is held and counted once (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const author = await svc.keyHeader(['POLICY_AUTHOR']);
      const saved = await svc.app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/policy`, headers: author, payload: { policy: { spec_version: '1', rules: [{ id: 'r', effect: 'ALLOW' }] }, note: 'twice' } });
      assert.equal(saved.statusCode, 201, saved.body);
      const row = await svc.ts.store.db.selectFrom('policy_versions').select(['version', 'document', 'hash']).where('project_id', '=', svc.projectId).executeTakeFirstOrThrow();
      const [size, chars] = [compiledCacheSize(), compiledCacheChars()];
      const both = await Promise.all([0, 1].map(() => compiledVersion(svc.ts.store.db, svc.projectId, row.version, row.hash)));
      assert.ok(both[0] && both[1]);
      assert.equal(compiledCacheSize(), size + 1);
      assert.equal(compiledCacheChars(), chars + row.document.length);
    } finally { await svc.stop(); }
  });
}
