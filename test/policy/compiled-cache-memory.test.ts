// Replay compiles any stored version (AUDITOR may ask), and each compiled version stayed cached up
// to 256 of them: a 10,000-rule version of 5 MB compiles to some 8 MB of heap, so replaying 256
// stored versions held about 2 GB. The cache keeps at most 24 Mi characters of documents compiled;
// a version it let go is compiled again, with the same answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { compiledCacheChars, compiledCacheSize } from '../../src/services/policy/active.ts';

const VERSIONS = 8;
const big = (k: number) => ({ spec_version: '1', rules: Array.from({ length: 10_000 }, (_, n) => ({ id: `r-${k}-${n}`, effect: 'ALLOW', when: { op: 'and', args: [
  { op: 'matches_resource', input: 'resource', value: `resource://p${k}/${'y'.repeat(300)}/${n}/*` },
  { op: 'eq', input: 'action', value: `act.${n}` }] } })) });

for (const backend of backends()) {
  test(`${backend.name}: replaying ${VERSIONS} stored 5 MB versions keeps at most 24 Mi characters of them compiled`, async () => {
    const svc = await startService(backend);
    try {
      const author = await svc.keyHeader(['POLICY_AUTHOR']);
      const auditor = await svc.keyHeader(['AUDITOR']);
      const base = `/v1/projects/${svc.projectId}/policy`;
      const replayed: number[] = [];
      for (let k = 0; k < VERSIONS; k++) {
        const saved = await svc.app.inject({ method: 'PUT', url: base, headers: author, payload: { policy: big(k), note: `v${k}` } });
        assert.equal(saved.statusCode, 201, saved.body.slice(0, 300));
        const version = saved.json().version as number;
        const res = await svc.app.inject({ method: 'POST', url: `${base}/replay`, headers: auditor, payload: { version } });
        assert.equal(res.statusCode, 200, res.body.slice(0, 300));
        replayed.push(version);
      }
      const { length } = await svc.ts.store.db.selectFrom('policy_versions').select('document').where('project_id', '=', svc.projectId).executeTakeFirstOrThrow().then((r) => r.document);
      assert.ok(compiledCacheSize() <= Math.floor(24 * 1024 * 1024 / length), `${compiledCacheSize()} versions of ${length} characters compiled`);
      // Every version saved here is as long: as many are kept as fit, and the characters counted are theirs.
      assert.equal(compiledCacheSize(), Math.floor(24 * 1024 * 1024 / length), `${compiledCacheSize()} versions of ${length} characters compiled`);
      assert.equal(compiledCacheChars(), compiledCacheSize() * length);
      const again = await svc.app.inject({ method: 'POST', url: `${base}/replay`, headers: auditor, payload: { version: replayed[0] } });
      assert.equal(again.statusCode, 200, 'a version let go compiles again');
    } finally { await svc.stop(); }
  });
}
