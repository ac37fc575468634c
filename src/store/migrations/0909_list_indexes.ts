// Indexes for the lists and counts the console and API page through, so that a page costs the
// rows it returns rather than every row of the project (each measured at 100,000-200,000 rows,
// SQLite without ANALYZE as the service runs it; PostgreSQL analysed):
// - executions filtered by status (the UNKNOWN queue a person resolves): executions_status was
//   (status, instance_id), so `status = ? and project_id = ?` newest first walked the project's
//   executions by id, ~130 ms per page on SQLite. (status, project_id, id) serves that list, the
//   dashboard's counts, the keeper's IN_FLIGHT sweep every 2 s and its instance check as before,
//   with the same number of B-trees per execution.
// - obligations pending and not expired (the dashboard's count, the approver's queue): an
//   obligation nobody answers stays `pending` once expired, so the count read every such row
//   (~100 ms SQLite, a sequential scan on PostgreSQL). A partial index holds only pending rows.
// - obligations and permits filtered by agent: each walked all of the project's rows.
// - permits and agents newest first: pages by (created_at, commitment | did). The permit index
//   lacked commitment (a sort per page), the agents table had none (every page sorted them all,
//   ~180 ms SQLite, ~300 ms PostgreSQL). PostgreSQL orders DIDs bytewise (collate "C": the
//   console's order, http/console/agents.ts), so its index does too.
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await sql`create index executions_by_status on executions (status, project_id, id)`.execute(db);
  await sql`drop index executions_status`.execute(db);
  await sql`create index approval_requests_pending on approval_requests (project_id, expires_at) where status = 'pending'`.execute(db);
  await sql`create index approval_requests_agent on approval_requests (project_id, agent, id)`.execute(db);
  await sql`create index permits_newest on permits (project_id, created_at, commitment)`.execute(db);
  await sql`drop index permits_project`.execute(db);
  await sql`create index permits_agent on permits (project_id, agent, created_at, commitment)`.execute(db);
  const did = dialect === 'postgres' ? sql`did collate "C"` : sql`did`;
  await sql`create index agents_newest on agents (project_id, created_at, ${did})`.execute(db);
}
