// The witness's last refusal or absence, as the audit log's leader met it, so every instance's
// console dashboard can say so (services/dashboard/sections.ts), not only the leader's log.
import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('audit_witness_problem')
    .addColumn('id', c.integer, (col) => col.primaryKey())
    .addColumn('kind', c.text, (col) => col.notNull())
    .addColumn('reason', c.text)
    .addColumn('at', c.text, (col) => col.notNull())
    .execute();
}
