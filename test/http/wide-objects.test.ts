// A large body's widest object is bounded (http/body.ts, MAX_OBJECT_MEMBERS). Every member a closed
// schema does not know was an Ajv error and then a field error before the answer kept 100: one
// simulate of 900,000 members (8 MB of `"k":0,`) from an AUDITOR key ran the served process's
// 256 MB heap out (hostile-input audit, session 53).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson, MAX_OBJECT_MEMBERS } from '../../src/http/body.ts';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';

const members = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `"${(i + from).toString(36)}":0`).join(',');
const codes = (e: unknown) => (e as { errors?: { code: string }[] }).errors?.map((x) => x.code);

test('a body over 64 KiB with an object of more members than the bound is refused once, at pointer ""; at the bound it is read', () => {
  const pad = `"pad":"${'x'.repeat(70_000)}"`;
  assert.throws(() => parseJson(Buffer.from(`{${pad},"o":{${members(MAX_OBJECT_MEMBERS + 1)}}}`)), (e) => {
    assert.deepEqual(codes(e), ['too_many_members']);
    return true;
  });
  assert.doesNotThrow(() => parseJson(Buffer.from(`{${pad},"o":{${members(MAX_OBJECT_MEMBERS)}}}`)));
  // The top level counts too, its own members with the rest.
  assert.throws(() => parseJson(Buffer.from(`{${pad},${members(MAX_OBJECT_MEMBERS, 1)}}`)), (e) => codes(e)?.[0] === 'too_many_members');
  // Within the default body limit nothing is counted: such a body cannot hold enough to matter.
  assert.doesNotThrow(() => parseJson(Buffer.from(`{${members(5_000)}}`)));
});

for (const backend of backends().slice(0, 1)) {
  describe(`wide objects on the 8 MiB routes (${backend.name})`, () => {
    let svc: TestService;
    before(async () => { svc = await startService(backend); });
    after(async () => { await svc.stop(); });
    const wide = (head: string) => `{${head},${members(900_000)}}`;

    test('an object of 900,000 members is a 400 too_many_members on every policy body route, both planes', async () => {
      const auditor = await svc.keyHeader(['AUDITOR']);
      const author = await svc.keyHeader(['POLICY_AUTHOR']);
      const M = `/v1/projects/${svc.projectId}/policy`;
      for (const [method, url, key, payload] of [
        ['PUT', M, author, wide('"note":"x","policy":{"spec_version":"1","rules":[]}')],
        ['POST', `${M}/simulate`, auditor, wide('"request":{"agent":"did:web:a"}')],
        ['POST', `${M}/simulate`, auditor, `{"request":{${members(900_000)}}}`],
        ['POST', `${M}/replay`, auditor, wide('"last":1')],
      ] as const) {
        const res = await svc.app.inject({ method, url, headers: { ...key, 'content-type': 'application/json' }, payload });
        assert.equal(res.statusCode, 400, `${method} ${url}: ${res.body.slice(0, 200)}`);
        assert.deepEqual(res.json().errors.map((e: { code: string }) => e.code), ['too_many_members'], `${method} ${url}`);
      }
      const person = await consoleMember(svc, ['AUDITOR']);
      const c = await svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/policy/simulate`, headers: person.post, payload: wide('"request":{"agent":"did:web:a"}') });
      assert.equal(c.statusCode, 400, c.body.slice(0, 200));
      assert.deepEqual(c.json().errors.map((e: { code: string }) => e.code), ['too_many_members']);
    });
  });
}
