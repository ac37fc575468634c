// Every list route the OpenAPI document publishes (a GET whose query takes `cursor` and `limit`, on
// either plane) pages as DESIGN.md and docs/identity.md say: `limit` 1-500 (default 50) spelt one
// way, an opaque cursor that names its list, newest first, and a walk of the pages at any size that
// gives each item once, even while items are added. A new list route fails here until it is described.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { anotherProject } from '../support/projects.ts';
import { startService, type TestService } from '../support/service.ts';
import { consoleMember } from '../support/console.ts';
import { ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { ed25519Pair, seedObligation } from '../support/approvals.ts';
import { seedExecution } from '../support/executions.ts';
import { registerApprovalKey } from '../../src/services/approvals/keys.ts';
import { mintApiKey } from '../../src/services/identity/api-keys.ts';

/** A project as the list routes see it: the headers of each plane and an APPROVER for approval-keys. */
interface Project { id: string; machine: Record<string, string>; console: Record<string, string>; author: Record<string, string>; approver: string }
/** A kind of item: `seed` adds one to a project and returns what `key` reads off its list entry. */
interface Kind { seed: (p: Project, n: number) => Promise<string>; key: (item: any) => string }

const SEEDED = 51; // one more than a default page

for (const backend of backends()) {
  describe(`list routes' contract on ${backend.name}`, () => {
    let svc: TestService;
    let own: Project;
    let other: Project;
    let routes: { template: string; list: string; member: string; kind: Kind; filters: Record<string, any> }[];
    const seeded = new Map<Kind, Map<string, string[]>>(); // kind → project → keys, oldest first

    const person = async (p: Project): Promise<{ principalId: string; keyId: string }> => {
      const { principalId } = p === own ? await svc.member([]) : await consoleMember(svc, [], { projectId: p.id });
      const key = await svc.ts.store.transaction((trx) => mintApiKey(trx, { projectId: p.id, principalId, name: 'k', roles: [], actor: 'system' }));
      return { principalId, keyId: key.id };
    };
    const inject = (method: 'GET' | 'POST' | 'PUT', url: string, headers: Record<string, string>, payload?: unknown) =>
      svc.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) } as never);
    const KINDS: Record<string, Kind> = {
      members: { seed: async (p) => (await person(p)).principalId, key: (m) => m.principal_id },
      memberships: { seed: async (p) => (await person(p)).principalId, key: (m) => m.principal_id },
      'api-keys': { seed: async (p) => (await person(p)).keyId, key: (k) => k.id },
      agents: {
        seed: async (p, n) => {
          const agent = `did:example:${p.id}-${String(n).padStart(4, '0')}`;
          assert.equal((await inject('POST', `/v1/projects/${p.id}/agents/freeze`, p.machine, { agent })).statusCode, 200);
          return agent;
        },
        key: (a) => a.did,
      },
      permits: {
        seed: async (p) => (await issue({ ...svc, projectId: p.id } as TestService, newAgent().did, { actions: ['pay'], resources: ['resource://shop/*'] })).commitment,
        key: (x) => x.commitment,
      },
      'policy/versions': {
        seed: async (p, n) => {
          const res = await inject('PUT', `/v1/projects/${p.id}/policy`, p.author, { policy: { ...ALLOW_PAYMENTS, rules: ALLOW_PAYMENTS.rules.slice(0, 1 + (n % 4)) }, note: `v${n}` });
          assert.ok(res.statusCode < 300, res.body);
          return res.json().id;
        },
        key: (v) => v.id,
      },
      approvals: { seed: async (p) => seedObligation({ ...svc, projectId: p.id } as TestService), key: (o) => o.id },
      'approval-keys': {
        seed: async (p) => (await registerApprovalKey(svc.deps.store, { projectId: p.id, principalId: p.approver, publicKey: ed25519Pair().publicKey, actor: 'system' }, new Date())).id,
        key: (k) => k.id,
      },
      // Settled: an IN_FLIGHT row of no live instance is turned UNKNOWN (and audited) by the recovery
      // sweep in the background, so a filtered walk could see its item leave the status between pages.
      executions: { seed: async (p) => seedExecution(svc.ts.store, p.id, { status: 'SUCCEEDED' }), key: (e) => e.id },
      audit: { seed: async (p, n) => KINDS.agents!.seed(p, 10_000 + n), key: (e) => (e.kind === 'agent.frozen' ? e.data.agent : e.id) },
    };
    const seed = async (kind: Kind, p: Project) => {
      const keys = seeded.get(kind)!.get(p.id)!;
      await new Promise((r) => setTimeout(r, 2)); // a millisecond of its own: creation order is list order
      keys.push(await kind.seed(p, keys.length));
    };

    const project = async (id: string, machine: Record<string, string>, author: Record<string, string>, approver: string): Promise<Project> =>
      ({ id, machine, author, approver, console: (await consoleMember(svc, ['ADMIN', 'AUDITOR'], { projectId: id })).get });

    before(async () => {
      svc = await startService(backend);
      const approver = await svc.member(['APPROVER']);
      own = await project(svc.projectId, await svc.keyHeader(['ADMIN', 'AUDITOR']), await svc.keyHeader(['POLICY_AUTHOR']), approver.principalId);
      const o = await anotherProject(svc.ts.store, ['ADMIN', 'AUDITOR', 'POLICY_AUTHOR', 'APPROVER']);
      const oh = { authorization: `Bearer ${o.secret}` };
      other = await project(o.projectId, oh, oh, o.principalId);

      const doc = (await svc.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      routes = [];
      for (const [template, ops] of Object.entries<any>(doc.paths)) {
        const query = (ops.get?.parameters ?? []).filter((q: any) => q.in === 'query');
        const names = query.map((q: any) => q.name);
        if (!names.includes('cursor') || !names.includes('limit')) continue;
        const rest = template.replace(/^\/v1(\/console)?\/projects\/\{projectId\}\//, '');
        const kind = KINDS[rest.replace('principals/{principalId}/', '')];
        assert.ok(kind, `${template} is a list route this test does not know: describe its items in KINDS`);
        const page = ops.get.responses['200'].content['application/json'].schema.properties;
        const member = Object.keys(page).find((k) => k !== 'next_cursor')!;
        const filters = Object.fromEntries(query.filter((q: any) => q.name !== 'cursor' && q.name !== 'limit').map((q: any) => [q.name, q.schema]));
        routes.push({ template, list: rest, member, kind, filters });
      }
      assert.ok(routes.length >= 14, `list routes found: ${routes.map((r) => r.template).join(', ')}`);
      for (const kind of new Set(routes.map((r) => r.kind))) {
        seeded.set(kind, new Map([[own.id, []], [other.id, []]]));
        for (let i = 0; i < SEEDED; i++) await seed(kind, own);
        for (let i = 0; i < 2; i++) await seed(kind, other);
      }
    });
    after(async () => { await svc.stop(); });

    const url = (template: string, p: Project) => template.replace('{projectId}', p.id).replace('{principalId}', p.approver);
    const headers = (template: string, p: Project) => (template.startsWith('/v1/console/') ? p.console : p.machine);
    const get = async (template: string, query = '', p = own) => {
      const res = await inject('GET', `${url(template, p)}${query ? `?${query}` : ''}`, headers(template, p));
      return { status: res.statusCode, body: res.json(), text: res.body };
    };
    /** The whole list, in pages of 500 (the audit log holds more). */
    const all = async (r: (typeof routes)[number], p = own, filter = '') => {
      const items: any[] = [];
      let cursor: string | null = null;
      do {
        const res = await get(r.template, `${filter}${filter && '&'}limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, p);
        assert.equal(res.status, 200, `${r.template}: ${res.text}`);
        items.push(...res.body[r.member]);
        cursor = res.body.next_cursor;
      } while (cursor);
      return items;
    };

    test('default 50, limit=500 takes all; newest first, and never another project\'s items', async () => {
      for (const r of routes) {
        const first = await get(r.template);
        assert.equal(first.status, 200, `${r.template}: ${first.text}`);
        assert.equal(first.body[r.member].length, 50, `${r.template} pages 50 by default`);
        assert.equal(typeof first.body.next_cursor, 'string', r.template);
        const keys = (await all(r)).map(r.kind.key);
        assert.ok(keys.length > 50, r.template);
        assert.deepEqual(keys.slice(0, 50), first.body[r.member].map(r.kind.key), `${r.template}: the default page is the first 50`);
        const mine = seeded.get(r.kind)!.get(own.id)!;
        assert.deepEqual(keys.filter((k) => mine.includes(k)), [...mine].reverse(), `${r.template} is newest first`);
        const theirs = seeded.get(r.kind)!.get(other.id)!;
        assert.ok(!keys.some((k) => theirs.includes(k)), `${r.template} shows another project's items`);
        if (r.template.includes('{principalId}')) {
          const foreign = await inject('GET', url(r.template, own).replace(own.approver, other.approver), headers(r.template, own));
          assert.ok(foreign.statusCode === 404 || foreign.json()[r.member].length === 0, `${r.template} of another project's principal: ${foreign.body}`);
        }
      }
    });

    test('limit: anything but a decimal 1-500, once, is 400 invalid_request at /limit in the query', async () => {
      for (const r of routes) {
        for (const bad of ['limit=0', 'limit=501', 'limit=-1', 'limit=1.5', 'limit=abc', 'limit=', 'limit=1&limit=2', 'limit=5&limit=5',
          // One spelling of each size: other notations of a number are not read as one.
          'limit=0x10', 'limit=1e2', 'limit=%2B5', 'limit=050', 'limit=1.0', 'limit=%205']) {
          const res = await get(r.template, bad);
          assert.equal(res.status, 400, `${r.template}?${bad}: ${res.text}`);
          assert.equal(res.body.code, 'invalid_request');
          assert.ok(res.body.errors.some((e: any) => e.pointer === '/limit' && e.in === 'query'), `${r.template}?${bad}: ${res.text}`);
        }
      }
    });

    test('a garbage, truncated or other list\'s cursor is 400 invalid_cursor; another project\'s is a position in this list', async () => {
      const cursors = new Map<string, string>(); // list → a cursor it issued
      for (const r of routes) {
        const res = await get(r.template, 'limit=1');
        cursors.set(r.list, res.body.next_cursor);
      }
      for (const r of routes) {
        const own1 = cursors.get(r.list)!;
        const refused = ['', 'garbage', own1.slice(0, -3), own1.slice(0, 10), ...[...cursors].filter(([list]) => list !== r.list).map(([, c]) => c)];
        for (const cursor of refused) {
          const res = await get(r.template, `cursor=${encodeURIComponent(cursor)}`);
          assert.equal(res.status, 400, `${r.template} with cursor ${cursor}: ${res.text}`);
          assert.equal(res.body.code, 'invalid_request');
          assert.deepEqual(res.body.errors.map((e: any) => [e.pointer, e.code, e.in]), [['/cursor', 'invalid_cursor', 'query']], r.template);
          // It says what to send instead: many clients send an unset parameter as `?cursor=`.
          assert.match(res.body.errors[0].message, cursor === '' ? /empty.*leave it out for the first page/ : /next_cursor.*leave it out for the first page/, `${r.template} with cursor ${cursor}`);
        }
        // docs/identity.md: within a list a cursor is a position, so another project's pages this
        // project's list from there, reading nothing of the other project.
        const foreign = await get(r.template, 'limit=1', other);
        assert.equal(foreign.status, 200, `${r.template} in the other project: ${foreign.text}`);
        assert.equal(typeof foreign.body.next_cursor, 'string', `${r.template}: the other project has two`);
        const res = await get(r.template, `limit=100&cursor=${encodeURIComponent(foreign.body.next_cursor)}`);
        assert.equal(res.status, 200, `${r.template} with another project's cursor: ${res.text}`);
        const keys = (await all(r)).map(r.kind.key);
        assert.ok(res.body[r.member].every((i: any) => keys.includes(r.kind.key(i))), `${r.template} answered another project's cursor with items not its own`);
      }
    });

    /** The keys of every page at `limit` (with `filter`), a new item added after each of the first two. */
    const walk = async (r: (typeof routes)[number], limit: number, filter = '') => {
      const walked: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await get(r.template, `${filter}${filter && '&'}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(res.status, 200, `${r.template}: ${res.text}`);
        assert.ok(res.body[r.member].length <= limit && (res.body[r.member].length > 0 || pages === 0), `${r.template} page ${pages}`);
        walked.push(...res.body[r.member].map(r.kind.key));
        cursor = res.body.next_cursor;
        if (++pages <= 2) await seed(r.kind, own); // newer than every page: never listed on this walk
      } while (cursor);
      return walked;
    };

    test('walking the pages at limit 1, 2 and 3 gives each item once, even while items are added', async () => {
      for (const r of routes) {
        for (const limit of [1, 2, 3]) {
          const expected = (await all(r)).map(r.kind.key);
          const walked = await walk(r, limit);
          // Items added before the first page was read (anything the service audits in the background,
          // such as its checkpoints' witness problems) lead the walk: they were newest when it began.
          const start = walked.indexOf(expected[0]!);
          assert.ok(start >= 0 && walked.slice(0, start).every((k) => !expected.includes(k)), `${r.template} walked at limit=${limit}: ${walked.slice(0, start + 1).join(', ')}`);
          assert.deepEqual(walked.slice(start), expected, `${r.template} walked at limit=${limit}`);
        }
      }
    });

    test('a documented filter refuses an unknown value, naming the ones it takes, and pages what it keeps', async () => {
      // Obligations and executions in a second status each, so that a filter has something to leave out.
      for (let i = 0; i < 3; i++) await seedObligation(svc, { expiresAt: new Date(Date.now() - 1000) });
      const failed = (await svc.ts.store.db.selectFrom('executions').select('id').where('project_id', '=', own.id).limit(3).execute()).map((e) => e.id);
      await svc.ts.store.db.updateTable('executions').set({ status: 'FAILED' }).where('id', 'in', failed).execute();
      const filtered = routes.filter((r) => Object.keys(r.filters).length > 0);
      assert.ok(filtered.length >= 5, filtered.map((r) => r.template).join(', '));
      for (const r of filtered) {
        for (const [name, schema] of Object.entries(r.filters)) {
          const res = await get(r.template, `${name}=nonsense`);
          assert.equal(res.status, 400, `${r.template}?${name}=nonsense: ${res.text}`);
          assert.equal(res.body.code, 'invalid_request');
          const error = res.body.errors.find((e: any) => e.pointer === `/${name}` && e.in === 'query');
          assert.ok(error, `${r.template}?${name}: ${res.text}`);
          const allowed: string[] = (schema.anyOf ?? []).flatMap((s: any) => s.enum ?? []);
          for (const value of allowed) assert.ok(error.message.includes(value), `${r.template}?${name}: "${error.message}" names ${value}`);
          // A value taken: an enum's each, or (agent) the newest item's.
          for (const value of allowed.length > 0 ? allowed : [(await get(r.template, 'limit=1')).body[r.member][0][name]]) {
            const q = `${name}=${encodeURIComponent(value)}`;
            const whole = await all(r, own, q);
            assert.ok(whole.every((i: any) => i[name] === value), `${r.template}?${q} lists only those`);
            if (['pending', 'expired', 'FAILED'].includes(value) || allowed.length === 0) assert.ok(whole.length > 0, `${r.template}?${q} lists some`);
            // As above: an item that came to match before the walk's first page leads it.
            const walked = await walk(r, 2, q);
            const expected = whole.map(r.kind.key);
            const start = expected.length === 0 ? walked.length : walked.indexOf(expected[0]!);
            assert.ok(start >= 0 && walked.slice(0, start).every((k) => !expected.includes(k)), `${r.template}?${q} walked at limit=2: ${walked.join(', ')}`);
            assert.deepEqual(walked.slice(start), expected, `${r.template}?${q} walked at limit=2`);
          }
        }
      }
    });
  });
}
