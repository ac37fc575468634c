// Cursors over composite keys (agents by time and DID, members, permits): the longest key an agent
// makes, and forged ones. The contract every list route keeps is test/http/list-contract.test.ts.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';

describe('key cursors', () => {
  const backend = backends()[0]!;
  let svc: TestService;
  let admin: ConsoleMember;

  before(async () => {
    svc = await startService(backend);
    admin = await consoleMember(svc, ['ADMIN', 'AUDITOR']);
  });
  after(async () => { await svc.stop(); });

  const get = async (url: string) => svc.app.inject({ method: 'GET', url, headers: admin.get });

  test('an agent with the longest DID gets a cursor its list takes back', async () => {
    const long = `did:web:${'a'.repeat(512 - 'did:web:'.length)}`;
    const key = await svc.keyHeader(['ADMIN']);
    for (const agent of ['did:example:before', long, 'did:example:after']) {
      assert.equal((await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent } })).statusCode, 200);
    }
    const path = `/v1/console/projects/${svc.projectId}/agents`;
    const first = (await get(`${path}?limit=2`)).json();
    assert.equal(first.agents[1].did, long);
    const next = await get(`${path}?limit=2&cursor=${encodeURIComponent(first.next_cursor)}`);
    assert.equal(next.statusCode, 200, next.body);
    assert.deepEqual(next.json().agents.map((a: { did: string }) => a.did), ['did:example:before']);
  });
});

// A cursor is opaque, but a client can forge one: a sort key holding a NUL (which PostgreSQL's text
// refuses) or a lone surrogate, or a policy version past PostgreSQL's integer, is no position any
// list issued, so it is a 400, never a 500.
for (const backend of backends()) {
  test(`a forged cursor holding a value no store keeps is 400 invalid_cursor (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const admin = await consoleMember(svc, ['ADMIN', 'AUDITOR']);
      const P = `/v1/console/projects/${svc.projectId}`;
      const lists = { members: `${P}/members`, memberships: `${P}/memberships`, agents: `${P}/agents`, permits: `${P}/permits` };
      for (const [list, path] of Object.entries(lists)) {
        for (const key of ['2026-01-01T00:00:00.000Z~\0', '2026-01-01T00:00:00.000Z~\ud800']) {
          const cursor = Buffer.from(JSON.stringify({ k: key, l: list })).toString('base64url');
          const res = await svc.app.inject({ method: 'GET', url: `${path}?cursor=${cursor}`, headers: admin.get });
          assert.equal(res.statusCode, 400, `${path} with ${JSON.stringify(key)}: ${res.body}`);
          assert.equal(res.json().errors[0].code, 'invalid_cursor');
        }
      }
      const key = await svc.keyHeader(['AUDITOR']);
      for (const [path, headers] of [[`/v1/projects/${svc.projectId}/policy/versions`, key], [`${P}/policy/versions`, admin.get]] as const) {
        for (const v of [2 ** 31, Number.MAX_SAFE_INTEGER]) {
          const cursor = Buffer.from(JSON.stringify({ v })).toString('base64url');
          const res = await svc.app.inject({ method: 'GET', url: `${path}?cursor=${cursor}`, headers });
          assert.equal(res.statusCode, 400, `${path} with version ${v}: ${res.body}`);
          assert.equal(res.json().errors[0].code, 'invalid_cursor');
        }
        const last = Buffer.from(JSON.stringify({ v: 2 ** 31 - 1 })).toString('base64url');
        assert.equal((await svc.app.inject({ method: 'GET', url: `${path}?cursor=${last}`, headers })).statusCode, 200, 'the largest version is a position');
      }
    } finally {
      await svc.stop();
    }
  });
}
