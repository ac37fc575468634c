// Isolation between projects, driven by the route table (role-matrix.data.ts): every route's call is
// built in project B (B's member, key, agent, permit, obligation, execution, audit event or policy
// version) and sent by a caller of project A holding every role there, twice: with B's projectId
// in the path (403, whatever it names) and with A's (the entry's `isolation`: 404 or the route's
// documented refusal, or a 2xx acting on A alone). Neither may change a row of B, and no answer may
// hold an identifier of B's rows the request did not carry.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { ROLES } from '../../src/domain/access/roles.ts';
import { hashPassword } from '../../src/lib/passwords.ts';
import { activatePolicy, ALLOW_PAYMENTS } from '../support/authorize.ts';
import { backends } from '../support/backends.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { anotherProject, inProject } from '../support/projects.ts';
import { startService, type TestService } from '../support/service.ts';
import { callRoute, matrixContext } from './matrix-context.ts';
import { ROUTES, type IsolationCase, type IsolationExpectation, type MatrixContext, type RouteEntry } from './role-matrix.data.ts';

const label = (e: RouteEntry) => `${e.method} ${e.path}`;
/** What names a row: the service's ids (`prn_…`, `apr_…`), an agent's did:key, a permit commitment. */
const IDENTIFIER = /^(?:[a-z]{3}_[0-9a-z]{26}|did:key:z[1-9A-HJ-NP-Za-km-z]{20,}|[0-9a-f]{64})$/;

for (const backend of backends()) {
  describe(`project isolation (${backend.name})`, () => {
    let svc: TestService;
    let a: MatrixContext;
    let b: MatrixContext;
    /** A person holding every role in A: a session, and a key it holds. */
    let session: ConsoleMember;
    let key: string;
    let tables: string[];

    before(async () => {
      svc = await startService(backend);
      const password = await hashPassword('isolation-person-password');
      a = matrixContext(svc, password);
      const other = inProject(svc, (await anotherProject(svc.ts.store, [])).projectId);
      b = matrixContext(other, password);
      session = await consoleMember(svc, [...ROLES]);
      key = (await svc.member([...ROLES], undefined, 'person')).key;
      await activatePolicy(svc, ALLOW_PAYMENTS);
      // A member of B whom a SoD conflict in A must not name.
      await other.member(['ADMIN', 'POLICY_AUTHOR']);
      // B's policy versions run past any A saves here, so a version B names is none of A's.
      const author = await other.keyHeader(['POLICY_AUTHOR']);
      for (let i = 0; i < 10; i++) {
        const res = await svc.app.inject({ method: 'PUT', url: `/v1/projects/${b.projectId}/policy`, headers: author, payload: { policy: ALLOW_PAYMENTS, note: 'b' } });
        assert.equal(res.statusCode, 201, res.body);
      }
      const db = svc.ts.store.db;
      tables = (svc.ts.store.dialect === 'sqlite'
        ? await sql<{ t: string }>`select m.name as t from sqlite_master m join pragma_table_info(m.name) c where m.type = 'table' and c.name = 'project_id'`.execute(db)
        : await sql<{ t: string }>`select table_name as t from information_schema.columns where table_schema = current_schema() and column_name = 'project_id'`.execute(db))
        .rows.map((r) => r.t).sort();
      assert.ok(tables.includes('permits') && tables.includes('audit_events'), tables.join());
    });
    after(async () => { await svc?.stop(); });

    /** Every row of project B (its members' principals and sessions, its signing key too), by table. */
    async function stateOf(projectId: string): Promise<Record<string, string[]>> {
      const db = svc.ts.store.db;
      const out: Record<string, unknown[]> = {};
      // Audit events by id: the sequencer numbers them meanwhile.
      for (const t of tables) out[t] = (await sql<Record<string, unknown>>`select * from ${sql.table(t)} where project_id = ${projectId}`.execute(db)).rows.map((r) => (t === 'audit_events' ? r.id : r));
      const members = db.selectFrom('memberships').select('principal_id').where('project_id', '=', projectId);
      out.projects = await db.selectFrom('projects').selectAll().where('id', '=', projectId).execute();
      out.principals = await db.selectFrom('principals').selectAll().where('id', 'in', members).execute();
      out.sessions = await db.selectFrom('sessions').selectAll().where('principal_id', 'in', members).execute();
      out.signer_keys = await db.selectFrom('signer_keys').selectAll().where('name', '=', `permit-${projectId}`).execute();
      // In one order: PostgreSQL returns rows in storage order, which the sequencer's updates change.
      const sorted = Object.entries(out).map(([t, rows]) => [t, rows.map((r) => JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).sort()]);
      return Object.fromEntries(sorted) as Record<string, string[]>;
    }
    /** The identifiers B's rows hold that no row outside B holds (an A decision records the permit it was shown). */
    async function identifiersOnlyOfB(state: Record<string, string[]>): Promise<string[]> {
      const found = new Set<string>();
      for (const rows of Object.values(state)) for (const r of rows) JSON.parse(r, (_, v: unknown) => { if (typeof v === 'string' && IDENTIFIER.test(v)) found.add(v); return v; });
      let elsewhere = '';
      for (const t of tables) elsewhere += JSON.stringify((await sql`select * from ${sql.table(t)} where project_id <> ${b.projectId}`.execute(svc.ts.store.db)).rows, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
      return [...found].filter((id) => !elsewhere.includes(id));
    }

    function headersFor(e: RouteEntry, who: ConsoleMember): Record<string, string> {
      if (e.plane === 'machine') return { authorization: `Bearer ${key}` };
      return e.method === 'GET' ? { ...who.get } : { cookie: who.post.cookie, 'x-csrf-token': who.post['x-csrf-token'] };
    }

    function meets(res: { statusCode: number; body: string }, want: IsolationExpectation): boolean {
      if (want === 'scoped') return res.statusCode >= 200 && res.statusCode < 300;
      let json: Record<string, unknown> = {};
      try { json = JSON.parse(res.body); } catch { /* not JSON */ }
      if (res.statusCode !== want.status || (want.code !== undefined && json.code !== want.code)) return false;
      return Object.entries(want.body ?? {}).every(([k, v]) => JSON.stringify(json[k]) === JSON.stringify(v));
    }

    for (const e of ROUTES) {
      test(label(e), async () => {
        assert.ok(e.isolation !== undefined, `${label(e)} has no isolation entry in role-matrix.data.ts`);
        const cases: IsolationCase[] = Array.isArray(e.isolation) ? e.isolation : [{ expect: e.isolation }];
        const failures: string[] = [];
        for (const [i, c] of cases.entries()) {
          const at = `case ${i}`;
          const ex = c.call ? await c.call(b, a) : e.example ? await e.example(b) : {};
          const who = e.endsSession ? await consoleMember(svc, [...ROLES]) : session;
          const beforeState = await stateOf(b.projectId);
          const sent = JSON.stringify(ex) + decodeURIComponent(ex.query ?? '') + b.projectId;
          const answers = [];
          if (e.path.includes('{projectId}')) {
            const res = await callRoute(svc, e, b.projectId, ex, headersFor(e, who));
            if (!meets(res, { status: 403, code: 'forbidden' })) failures.push(`${at}, B's projectId: expected 403 forbidden, got ${res.statusCode} ${res.body}`);
            answers.push(res.body);
          }
          const res = await callRoute(svc, e, a.projectId, ex, headersFor(e, who));
          if (!meets(res, c.expect)) failures.push(`${at}, A's projectId: expected ${JSON.stringify(c.expect)}, got ${res.statusCode} ${res.body}`);
          answers.push(res.body);
          const afterState = await stateOf(b.projectId);
          for (const t of Object.keys(afterState)) {
            if (JSON.stringify(afterState[t]) !== JSON.stringify(beforeState[t])) failures.push(`${at}: B's ${t} changed`);
          }
          for (const id of await identifiersOnlyOfB(afterState)) {
            if (!sent.includes(id) && answers.some((body) => body.includes(id))) failures.push(`${at}: the answer holds ${id}, of B`);
          }
        }
        assert.deepEqual(failures, [], `${label(e)}:\n  ${failures.join('\n  ')}`);
      });
    }
  });
}
