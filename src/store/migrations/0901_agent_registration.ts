// An agent row appears the first time anything names its DID: a permit issued to it, a freeze, a
// decision. Registering it (console) is a separate act, so it has columns of its own: an agent seen
// first through a permit can still be registered and named later, and the view says which agents
// were registered by a person. Agents registered before this migration take the time and actor of
// their `agent.registered` audit event.
import { sql, type Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.alterTable('agents').addColumn('registered_at', c.text).execute();
  await db.schema.alterTable('agents').addColumn('registered_by', c.text).execute();
  const agentOf = dialect === 'postgres' ? sql`(e.data::jsonb ->> 'agent')` : sql`json_extract(e.data, '$.agent')`;
  const first = (column: 'created_at' | 'actor') => sql`(select e.${sql.ref(column)} from audit_events e
    where e.project_id = agents.project_id and e.kind = 'agent.registered' and ${agentOf} = agents.did order by e.seq limit 1)`;
  await sql`update agents set registered_at = ${first('created_at')}, registered_by = ${first('actor')}`.execute(db);
}
