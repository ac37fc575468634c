// The lists, counts and sweeps that read tables growing without bound (executions, obligations,
// permits, agents, audit events) reach their rows through an index, without sorting the project's
// rows and without reading the rows before a cursor (migration 0909) or outside a time window. The
// statements are the ones the service runs, captured as they are compiled. SQLite is planned as the
// service runs it (no ANALYZE). PostgreSQL is given rows shaped as they grow (most executions done,
// few UNKNOWN; most pending obligations long expired; many agents) and analysed, and sequential
// scans (and sorts, where none is expected) are priced out: a plan that still has one has no index
// to serve it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql, type KyselyPlugin, type RootOperationNode, type QueryId } from 'kysely';
import { backends } from '../support/backends.ts';
import type { Db, Store } from '../../src/store/store.ts';
import { listExecutions } from '../../src/services/executions/list.ts';
import { sweepInFlight } from '../../src/services/executions/recovery.ts';
import { dashboardSections } from '../../src/services/dashboard/sections.ts';
import { listObligations } from '../../src/services/approvals/approvals.ts';
import { listPermitRows } from '../../src/services/permits/list.ts';
import { permitViews } from '../../src/services/permits/permits.ts';
import { listAgentRows } from '../../src/services/agents/list.ts';
import { encodeCursor } from '../../src/http/paging.ts';
import { countAuditEventsSince } from '../../src/services/audit/window.ts';
import { replayPolicy } from '../../src/services/policy/replay.ts';
import { latestCheckpoint } from '../../src/services/auditlog/checkpointer.ts';

const P = 'prj_plans';
const NOW = new Date('2026-06-01T00:00:00.000Z');

const ROWS = 20_000;
const FILL: Record<string, string> = {
  executions: `insert into executions (id, project_id, nonce, fingerprint, decision_id, decision_audit_id, agent, action, resource, merchant, operation, status, instance_id, created_at)
    select 'exe_' || lpad(i::text, 26, '0'), '${P}', 'n' || i, 'f', 'dec', 'aud', 'did:key:z' || (i % 100), 'pay', 'r', 'm', 'op',
      case when i % 1000 = 7 then 'UNKNOWN' when i % 4000 = 9 then 'IN_FLIGHT' else 'SUCCEEDED' end, 'ins_old', '2026-01-01T00:00:00.000Z' from generate_series(1, ${ROWS}) i`,
  approval_requests: `insert into approval_requests (id, project_id, decision_id, agent, action, resource, policy_version, matched_rules, status, created_at, expires_at)
    select 'apr_' || lpad(i::text, 26, '0'), '${P}', 'dec', 'did:key:z' || (i % 100), 'pay', 'r', 1, '[]', case when i % 2 = 0 then 'consumed' else 'pending' end,
      '2026-01-01T00:00:00.000Z', case when i > ${ROWS} - 5 then '2027-01-01T00:00:00.000Z' else '2026-01-02T00:00:00.000Z' end from generate_series(1, ${ROWS}) i`,
  permits: `insert into permits (commitment, project_id, agent, parent, claims, issued_by, created_at, expires_at)
    select 'c_' || lpad(i::text, 26, '0'), '${P}', 'did:key:z' || (i % 100), case when i % 3 = 0 then null else 'c_' || lpad((i - 1)::text, 26, '0') end, '{}', 'x',
      '2026-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z' from generate_series(1, ${ROWS}) i`,
  agents: `insert into agents (project_id, did, created_at, created_by) select '${P}', 'did:key:z' || i, '2026-01-01T00:00:00.000Z', 'x' from generate_series(1, ${ROWS}) i`,
  // A checkpoint a second, the witness cosigning one in a thousand (none at all when none is configured).
  audit_checkpoints: `insert into audit_checkpoints (size, root, note, created_at, witnessed_at)
    select i, '\\x00'::bytea, 'note', '2026-01-01T00:00:00.000Z', case when i % 1000 = 0 then '2026-01-01T00:00:00.000Z' end from generate_series(1, ${ROWS}) i`,
  // Most of a year of events of this project and another, 25 minutes apart, with ids as the service
  // mints them (lib/ids.ts: the millisecond of created_at, Crockford base32, first).
  audit_events: `insert into audit_events (id, project_id, kind, actor, created_at, data)
    select 'aud_' || (select string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz', ((ms >> (5 * (9 - k))) & 31)::int + 1, 1), '' order by k) from generate_series(0, 9) k)
        || lpad(i::text, 15, '0') || p, case p when 0 then '${P}' else 'prj_other' end, 'decision', 'system',
      to_char(to_timestamp(ms / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '{}'
    from generate_series(1, ${ROWS}) i, generate_series(0, 1) p, lateral (select ${Date.parse('2025-06-20T00:00:00.000Z')}::bigint + i::bigint * 1500000 as ms) t`,
};

/** PostgreSQL plans by its statistics: `table` filled, vacuumed and analysed. SQLite plans without any. */
async function fill(store: Store, table: string): Promise<void> {
  if (store.dialect !== 'postgres') return;
  if ((await sql.raw(`select 1 from ${table} limit 1`).execute(store.db)).rows.length > 0) return;
  await sql.raw(FILL[table]!).execute(store.db);
  // Vacuumed too, as autovacuum leaves a table that only grows: its pages all visible, so an index-only read pays no row.
  await sql.raw(`vacuum analyze ${table}`).execute(store.db);
}

/** The plan of every statement `run` makes that names `table`; `sorts`: PostgreSQL may sort (a bounded set). */
async function plansOf(store: Store, table: string, run: (db: Db) => Promise<unknown>, opts: { sorts?: boolean } = {}): Promise<string[]> {
  const captured: { node: RootOperationNode; queryId: QueryId }[] = [];
  const capture: KyselyPlugin = {
    transformQuery: (args) => { captured.push(args); return args.node; },
    transformResult: async (args) => args.result,
  };
  await fill(store, table);
  await run(store.db.withPlugin(capture));
  const executor = store.db.getExecutor();
  const queries = captured.map((c) => executor.compileQuery(c.node, c.queryId)).filter((q) => new RegExp(`\\b${table}\\b`).test(q.sql));
  assert.ok(queries.length > 0, `no statement read ${table}`);
  if (store.dialect === 'sqlite') {
    const plans: string[] = [];
    for (const q of queries) {
      const { rows } = await store.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${q.sql}`, [...q.parameters]));
      plans.push(rows.map((r) => r.detail).join('\n'));
    }
    return plans;
  }
  return store.transaction(async (trx) => {
    await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
    if (!opts.sorts) await trx.executeQuery(CompiledQuery.raw('set local enable_sort = off'));
    const plans: string[] = [];
    for (const q of queries) {
      const { rows } = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${q.sql}`, [...q.parameters]));
      plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
    }
    return plans;
  });
}

/** Reads `table` through `index` only, with no full scan of it and (unless `sorts`) no sort. */
function assertIndexed(plan: string, table: string, index: string, opts: { sorts?: boolean; keyed?: RegExp } = {}): void {
  assert.match(plan, new RegExp(`\\b${index}\\b`), `${table} is read through ${index}:\n${plan}`);
  assert.doesNotMatch(plan, new RegExp(`(^|\\n)SCAN ${table}\\b|Seq Scan on ${table}\\b`), `no full scan of ${table}:\n${plan}`);
  if (!opts.sorts) assert.doesNotMatch(plan, /TEMP B-TREE|Sort\b/, `no sort:\n${plan}`);
  if (opts.keyed) assert.match(plan, opts.keyed, `the cursor and filters are index bounds, not filters over the rows before them:\n${plan}`);
}

const cursorKey = (...columns: string[]) => new RegExp(`\\(${columns.join(',')}\\)<\\(\\?,\\?\\)|Index Cond: .*ROW\\(${columns.map((c) => `\\(?${c}[^,]*`).join(', ')}\\) < ROW`);

for (const backend of backends()) {
  test(`the executions list filtered by status (the UNKNOWN queue), with its cursor, reads its rows by index (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const plans = await plansOf(ts.store, 'executions', async (db) => {
        await listExecutions(db, P, { limit: 50, status: 'UNKNOWN' });
        await listExecutions(db, P, { limit: 50, status: 'UNKNOWN', cursor: encodeCursor('exe_01jxa5a8e2b3c4d5e6f7g8h9jk') });
      });
      for (const plan of plans) assertIndexed(plan, 'executions', 'executions_by_status');
    } finally { await ts.cleanup(); }
  });

  test(`the keeper's sweep every 2 s and the dashboard's counts read executions by status (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const plans = await plansOf(ts.store, 'executions', async (db) => {
        await sweepInFlight({ ...ts.store, db }, { instanceId: 'ins_a', now: NOW, maxTimeoutMs: 30_000, startup: false });
        await dashboardSections(db, P, NOW);
      }, { sorts: true });
      for (const plan of plans) assertIndexed(plan, 'executions', 'executions_by_status', { sorts: true });
    } finally { await ts.cleanup(); }
  });

  test(`pending obligations (the dashboard's count, the approver's queue) are read without the expired ones (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const plans = await plansOf(ts.store, 'approval_requests', async (db) => {
        await dashboardSections(db, P, NOW);
        await listObligations(db, P, { limit: 50, status: 'pending' }, NOW);
      }, { sorts: true });
      // The queue sorts the live pending obligations only, which the index bounds.
      for (const plan of plans) assertIndexed(plan, 'approval_requests', 'approval_requests_pending', { sorts: true });
      // The index holds the pending rows only: status is no filter over what it reads (PostgreSQL), and
      // the count reads nothing but the index (SQLite).
      for (const plan of plans) assert.doesNotMatch(plan, /Filter: \(status = 'pending'/, plan);
      if (ts.store.dialect === 'sqlite') assert.match(plans[0]!, /COVERING INDEX approval_requests_pending/, plans[0]);
    } finally { await ts.cleanup(); }
  });

  test(`obligations filtered by agent, with a cursor, are read by index (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const [plan] = await plansOf(ts.store, 'approval_requests', (db) => listObligations(db, P, { limit: 50, agent: 'did:key:z6Mkagent', before: 'apr_01jxa5a8e2b3c4d5e6f7g8h9jk' }, NOW));
      assertIndexed(plan!, 'approval_requests', 'approval_requests_agent');
    } finally { await ts.cleanup(); }
  });

  test(`permits newest first, by agent or not, seek to the cursor in an index (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const before = '2026-05-01T00:00:00.000Z~c_abc';
      const [all] = await plansOf(ts.store, 'permits', (db) => listPermitRows(db, P, { before, limit: 51 }));
      assertIndexed(all!, 'permits', 'permits_newest', { keyed: cursorKey('created_at', 'commitment') });
      const [byAgent] = await plansOf(ts.store, 'permits', (db) => listPermitRows(db, P, { agent: 'did:key:z6Mkagent', before, limit: 51 }));
      assertIndexed(byAgent!, 'permits', 'permits_agent', { keyed: cursorKey('created_at', 'commitment') });
    } finally { await ts.cleanup(); }
  });

  test(`agents newest first seek to the cursor in an index, without sorting the project's agents (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const plans = await plansOf(ts.store, 'agents', async (db) => {
        await listAgentRows(db, ts.store.dialect, P, { limit: 51 });
        await listAgentRows(db, ts.store.dialect, P, { before: '2026-05-01T00:00:00.000Z~did:key:z6Mkagent', limit: 51 });
      });
      assertIndexed(plans[0]!, 'agents', 'agents_newest');
      assertIndexed(plans[1]!, 'agents', 'agents_newest', { keyed: cursorKey('created_at', 'did') });
    } finally { await ts.cleanup(); }
  });

  // audit_events keeps no index on created_at (decision 0603's fewer B-trees): a window on it is a
  // range of ids (services/audit/window.ts), an index bound. SQLite reads it in (project_id, id);
  // PostgreSQL, which keeps a unique index on id too, may read the window's ids there when the
  // project holds many of them (here half).
  test(`the overview's events of the last 24 hours and a replay window read a range of ids by index, not the project's every event (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const index = ts.store.dialect === 'sqlite' ? 'audit_events_project' : 'audit_events_(?:project|id_key)';
      const bounded = (plan: string, lower: boolean, upper: boolean) => {
        assertIndexed(plan, 'audit_events', index);
        const sqlite = `(project_id=? AND ${[lower ? 'id>?' : '', upper ? 'id<?' : ''].filter(Boolean).join(' AND ')})`;
        if (ts.store.dialect === 'sqlite') assert.ok(plan.includes(sqlite), `the window bounds the index: ${sqlite}\n${plan}`);
        else for (const [on, cond] of [[lower, /Index Cond: .*\(id >= '/], [upper, /Index Cond: .*\(id < '/]] as const) if (on) assert.match(plan, cond, plan);
      };
      // The day's events from the index alone (they are a busy day's every event), but for the lead's
      // ids at the window's start, whose created_at is read.
      const [recent, edge] = await plansOf(ts.store, 'audit_events', (db) => countAuditEventsSince(db, P, new Date(NOW.getTime() - 86_400_000)));
      bounded(recent!, true, false);
      // PostgreSQL reads the index alone once vacuum has marked the pages visible, which another
      // suite's open transaction can hold back: a bitmap scan of the same bounded index is as good.
      assert.match(recent!, ts.store.dialect === 'sqlite' ? /COVERING INDEX audit_events_project/ : /Index Only Scan|Bitmap Index Scan on audit_events_(?:project|id_key)/, recent);
      bounded(edge!, true, true);
      const policy = { spec_version: '1', rules: [{ id: 'no', effect: 'DENY' }] };
      const [window] = await plansOf(ts.store, 'audit_events', (db) => replayPolicy(db, P, { policy, from: '2025-09-01T00:00:00Z', until: '2025-09-02T00:00:00Z' }));
      bounded(window!, true, true);
      const [until] = await plansOf(ts.store, 'audit_events', (db) => replayPolicy(db, P, { policy, until: '2025-09-02T00:00:00Z' }));
      bounded(until!, false, true);
    } finally { await ts.cleanup(); }
  });

  test(`the newest witnessed checkpoint (the dashboard, GET /audit/log, a verification, the witness round) is read from an index of the witnessed ones (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const plans = await plansOf(ts.store, 'audit_checkpoints', async (db) => {
        await latestCheckpoint(db, { witnessed: true });
        await dashboardSections(db, P, NOW);
      });
      // Both reads of the witnessed one (the first, and the dashboard's second) take the newest entry
      // of the partial index, not the primary key walked back over the checkpoints nobody cosigned.
      // (SQLite calls a walk of an index in its order a SCAN of it: LIMIT 1 stops it at the first.)
      for (const plan of [plans[0]!, plans[2]!]) {
        assert.match(plan, /\baudit_checkpoints_witnessed\b/, plan);
        assert.doesNotMatch(plan, /Seq Scan|Sort\b|TEMP B-TREE|audit_checkpoints_pkey|sqlite_autoindex_audit_checkpoints/, plan);
      }
    } finally { await ts.cleanup(); }
  });

  test(`a permit's revoked ancestors are looked up by commitment, not among every permit of the project (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const row = { commitment: 'c_child', agent: 'did:key:z6Mkagent', parent: 'c_parent', claims: '{}', issued_by: 'x', created_at: '2026-05-01T00:00:00.000Z', expires_at: '2027-01-01T00:00:00.000Z', revoked_at: null, revoked_by: null };
      const plans = await plansOf(ts.store, 'permits', (db) => permitViews(db, P, [row], NOW));
      for (const plan of plans) {
        assert.doesNotMatch(plan, /(^|\n)SCAN permits\b|Seq Scan on permits\b/, plan);
        // Every read of a permit is by its key: none by project alone.
        assert.doesNotMatch(plan, /USING (COVERING )?INDEX \w+ \(project_id=\?\)/, plan);
      }
    } finally { await ts.cleanup(); }
  });
}

for (const backend of backends()) for (const indexed of [true, false]) {
  // Without the indexes too: the order is the statement's, not that of whichever index a plan reads.
  test(`agents and permits paged one at a time through a tie in created_at come each once, in byte order of the tie-break (${backend.name}${indexed ? '' : ', their list indexes dropped'})`, async () => {
    const ts = await backend.open();
    try {
      const db = ts.store.db;
      if (!indexed) for (const index of ['permits_newest', 'permits_agent', 'agents_newest']) await sql.raw(`drop index ${index}`).execute(db);
      const at = '2026-05-01T00:00:00.000Z';
      const dids = ['did:key:zto', 'did:key:ztU', 'did:key:zta', 'did:key:zT'];
      for (const did of dids) await db.insertInto('agents').values({ project_id: P, did, created_at: at, created_by: 'x' }).execute();
      await db.insertInto('agents').values({ project_id: P, did: 'did:key:zold', created_at: '2026-04-01T00:00:00.000Z', created_by: 'x' }).execute();
      const agents: string[] = [];
      for (let before: string | undefined; ;) {
        const [row] = await listAgentRows(db, ts.store.dialect, P, { before, limit: 1 });
        if (!row) break;
        agents.push(row.did);
        before = `${row.created_at}~${row.did}`;
      }
      const bytewise = (a: string, b: string) => Buffer.compare(Buffer.from(b), Buffer.from(a));
      assert.deepEqual(agents, [...[...dids].sort(bytewise), 'did:key:zold']);

      for (const c of ['c_b', 'c_a', 'c_c']) {
        await db.insertInto('permits').values({ commitment: c, project_id: P, agent: 'did:key:zto', parent: null, claims: '{}', issued_by: 'x', created_at: at, expires_at: '2027-01-01T00:00:00.000Z' }).execute();
      }
      const permits: string[] = [];
      for (let before: string | undefined; ;) {
        const [row] = await listPermitRows(db, P, { agent: 'did:key:zto', before, limit: 1 });
        if (!row) break;
        permits.push(row.commitment);
        before = `${row.created_at}~${row.commitment}`;
      }
      assert.deepEqual(permits, ['c_c', 'c_b', 'c_a']);
    } finally { await ts.cleanup(); }
  });
}
