// SQLite: fewer B-trees written per decision. Every decision inserts a decisions row and an audit
// event, and each B-tree it touches costs pages in the WAL of every group commit (an index grows
// by rebalancing its last three leaves, not by appending one).
// - decisions was a rowid table plus an index on id plus one on (project_id, id); nothing looks a
//   decision up by id alone (policy replay lists a project's decisions by id), so it becomes one
//   B-tree keyed (project_id, id).
// - audit_events kept a global unique index on id besides (project_id, id); every lookup by id
//   names its project (proofs), so (project_id, id) becomes the unique one and the other goes.
// Ids are 128-bit, time-prefixed and random, so uniqueness per project loses nothing in practice.
// PostgreSQL keeps its schema: its index maintenance does not sit on the commit's critical path in
// the same way, and its tables are not rebuilt for it.
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../store.ts';

const DECISION_COLUMNS = `id, project_id, request_id, audit_id, agent, action, resource, amount_minor, amount_currency,
  delegation_depth, permit_commitment, request_time, decision, reason_code, policy_version, matched_rules, created_at,
  intent, approval_request_id`;

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  await sql`create table decisions_by_project (id text not null, project_id text not null, request_id text not null,
    audit_id text not null, agent text not null, action text not null, resource text not null, amount_minor bigint,
    amount_currency text, delegation_depth integer not null, permit_commitment text, request_time text not null,
    decision text not null, reason_code text not null, policy_version integer, matched_rules text not null,
    created_at text not null, intent text, approval_request_id text,
    constraint decisions_pk primary key (project_id, id)) without rowid`.execute(db);
  await sql.raw(`insert into decisions_by_project (${DECISION_COLUMNS}) select ${DECISION_COLUMNS} from decisions`).execute(db);
  await sql`drop table decisions`.execute(db);
  await sql`alter table decisions_by_project rename to decisions`.execute(db);

  await sql`create table audit_events_rebuilt (seq integer primary key autoincrement, id text not null,
    project_id text not null, kind text not null, actor text not null, created_at text not null, data text not null,
    leaf_index bigint unique)`.execute(db);
  await sql`insert into audit_events_rebuilt (seq, id, project_id, kind, actor, created_at, data, leaf_index)
    select seq, id, project_id, kind, actor, created_at, data, leaf_index from audit_events order by seq`.execute(db);
  // AUTOINCREMENT never reuses a seq: carry the old high-water mark over, not just max(seq).
  // (sqlite_sequence has no key on name: update the row the copy made, or add one if it made none.)
  await sql`update sqlite_sequence set seq = (select max(seq) from sqlite_sequence where name in ('audit_events', 'audit_events_rebuilt'))
    where name = 'audit_events_rebuilt'`.execute(db);
  await sql`insert into sqlite_sequence (name, seq) select 'audit_events_rebuilt', seq from sqlite_sequence
    where name = 'audit_events' and not exists (select 1 from sqlite_sequence where name = 'audit_events_rebuilt')`.execute(db);
  await sql`drop table audit_events`.execute(db);
  await sql`alter table audit_events_rebuilt rename to audit_events`.execute(db);
  await sql`create unique index audit_events_project on audit_events (project_id, id)`.execute(db);
}
