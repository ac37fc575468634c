// List routes page as DESIGN.md says: opaque `cursor`, `limit` default 50 and at most 500, newest
// first. Walking the pages with a small limit gives exactly the full list, in the same order.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';

interface ListRoute { path: string; member: string; id: (item: any) => string; newest: (item: any) => string }

describe('paging of list routes', () => {
  const backend = backends()[0]!;
  let svc: TestService;
  let admin: ConsoleMember;
  let routes: ListRoute[];

  before(async () => {
    svc = await startService(backend);
    admin = await consoleMember(svc, ['ADMIN', 'AUDITOR']);
    // 55 members, each with a key: more than one default page of members, memberships and keys.
    for (let i = 0; i < 54; i++) await svc.member(['AUDITOR']);
    const P = `/v1/console/projects/${svc.projectId}`;
    routes = [
      { path: `${P}/members`, member: 'members', id: (m) => m.principal_id, newest: (m) => `${m.member_since}~${m.principal_id}` },
      { path: `${P}/memberships`, member: 'memberships', id: (m) => m.principal_id, newest: (m) => `${m.created_at}~${m.principal_id}` },
      { path: `${P}/api-keys`, member: 'api_keys', id: (k) => k.id, newest: (k) => k.id },
    ];
  });
  after(async () => { await svc.stop(); });

  const get = async (url: string) => svc.app.inject({ method: 'GET', url, headers: admin.get });

  test('default 50, limit 1-500, pages newest first that add up to the whole list', async () => {
    for (const route of routes) {
      const first = await get(route.path);
      assert.equal(first.statusCode, 200, `${route.path}: ${first.body}`);
      assert.equal(first.json()[route.member].length, 50, `${route.path} pages 50 by default`);
      assert.equal(typeof first.json().next_cursor, 'string', `${route.path} has a next page`);

      const all = (await get(`${route.path}?limit=500`)).json();
      assert.ok(all[route.member].length > 50);
      assert.equal(all.next_cursor, null);
      const keys = all[route.member].map(route.newest);
      assert.deepEqual(keys, [...keys].sort().reverse(), `${route.path} is newest first`);

      const walked: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await get(`${route.path}?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(res.statusCode, 200);
        const body = res.json();
        assert.ok(body[route.member].length <= 7);
        walked.push(...body[route.member].map(route.id));
        cursor = body.next_cursor;
      } while (cursor);
      assert.deepEqual(walked, all[route.member].map(route.id), `${route.path}: pages add up to the list`);

      // One spelling of each size: other notations of a number are not read as one.
      for (const bad of ['limit=0', 'limit=501', 'limit=abc', 'cursor=nonsense', 'limit=0x10', 'limit=1e2', 'limit=%2B5', 'limit=050', 'limit=1.0', 'limit=%205']) {
        const res = await get(`${route.path}?${bad}`);
        assert.equal(res.statusCode, 400, `${route.path}?${bad}`);
        assert.equal(res.json().code, 'invalid_request');
      }
    }
  });

  test('a cursor one list issued is refused by every other list, rather than read as its end or its start', async () => {
    const P = `/v1/console/projects/${svc.projectId}`;
    // One cursor of each list (a second page exists for each: 55 of everything).
    await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: await svc.keyHeader(['ADMIN']), payload: { agent: 'did:example:one' } });
    await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: await svc.keyHeader(['ADMIN']), payload: { agent: 'did:example:two' } });
    const lists = [`${P}/members`, `${P}/memberships`, `${P}/api-keys`, `${P}/agents`, `${P}/audit`];
    const cursors = new Map<string, string>();
    for (const path of lists) {
      const res = await get(`${path}?limit=1`);
      assert.equal(res.statusCode, 200, `${path}: ${res.body}`);
      assert.equal(typeof res.json().next_cursor, 'string', path);
      cursors.set(path, res.json().next_cursor);
    }
    for (const [from, cursor] of cursors) {
      for (const path of lists) {
        const res = await get(`${path}?limit=1&cursor=${encodeURIComponent(cursor)}`);
        if (path === from) { assert.equal(res.statusCode, 200, `${path} takes its own cursor`); continue; }
        assert.equal(res.statusCode, 400, `${path} with a cursor of ${from}: ${res.body}`);
        assert.equal(res.json().errors[0].code, 'invalid_cursor');
      }
    }
  });

  test('an agent with the longest DID gets a cursor its list takes back', async () => {
    const long = `did:web:${'a'.repeat(512 - 'did:web:'.length)}`;
    const key = await svc.keyHeader(['ADMIN']);
    for (const agent of [long, 'did:example:after']) {
      assert.equal((await svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/agents/freeze`, headers: key, payload: { agent } })).statusCode, 200);
    }
    const path = `/v1/console/projects/${svc.projectId}/agents`;
    const first = (await get(`${path}?limit=2`)).json();
    assert.equal(first.agents[1].did, long);
    const next = await get(`${path}?limit=2&cursor=${encodeURIComponent(first.next_cursor)}`);
    assert.equal(next.statusCode, 200, next.body);
    assert.ok(!next.json().agents.some((a: { did: string }) => a.did === long));
  });
});

// A cursor is opaque, but a client can forge one: a sort key holding a NUL (which PostgreSQL's text
// refuses) or a lone surrogate is no position any list issued, so it is a 400, never a 500.
for (const backend of backends()) {
  test(`a forged key cursor holding text no store keeps is 400 invalid_cursor (${backend.name})`, async () => {
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
    } finally {
      await svc.stop();
    }
  });
}
