// A decision is recorded once: as its audit event, whose data holds every field the `decisions`
// table repeated (inputs, decision, reason, detail, policy version, matched rules, permit
// commitment, delegation depth, request time, obligation). The table was written with every
// decision and read only by policy replay, which now reads the events (services/policy/replay.ts):
// one B-tree fewer per decision on SQLite (about 5 of a group commit's 17 WAL pages), one INSERT
// fewer per decision on PostgreSQL. Dropped only if every row's event is there: nothing is lost.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  const missing = await sql<{ n: number | string }>`select count(*) as n from decisions d
    where not exists (select 1 from audit_events e where e.project_id = d.project_id and e.id = d.audit_id and e.kind = 'decision')`.execute(db);
  const n = Number(missing.rows[0]!.n);
  if (n > 0) throw new Error(`migration 0604: ${n} decisions have no audit event; the decisions table is kept until that is explained`);
  await sql`drop table decisions`.execute(db);
}
