// audit_nodes keyed in append order. Keyed by (level, idx), every level is its own key range, so a
// batch of appends inserted into the middle of the B-tree once per level it completed (about nine
// pages of WAL per SQLite commit, a third of all it wrote). Keyed by (pos, level), where pos is
// the last leaf a node covers ((idx + 1) * 2^level - 1, see domain/auditlog/tree.ts nodePos), the
// nodes a batch completes are adjacent and at the right edge. The map between the two keys is a
// bijection, so (level, idx) stays unique and is still what readers ask for.
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`create table audit_nodes_by_pos (pos bigint not null, level integer not null, idx bigint not null,
      hash blob not null, constraint audit_nodes_pk primary key (pos, level)) without rowid`.execute(db);
    await sql`insert into audit_nodes_by_pos (pos, level, idx, hash)
      select ((idx + 1) << level) - 1, level, idx, hash from audit_nodes`.execute(db);
    await sql`drop table audit_nodes`.execute(db);
    await sql`alter table audit_nodes_by_pos rename to audit_nodes`.execute(db);
    return;
  }
  await sql`alter table audit_nodes add column pos bigint`.execute(db);
  await sql`update audit_nodes set pos = ((idx + 1) << level) - 1`.execute(db);
  await sql`alter table audit_nodes alter column pos set not null`.execute(db);
  await sql`alter table audit_nodes drop constraint audit_nodes_pk`.execute(db);
  await sql`alter table audit_nodes add constraint audit_nodes_pk primary key (pos, level)`.execute(db);
}
