import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

// `decisions` may already exist from the policy-lifecycle migration (it reads it for replay);
// this one makes sure it exists and 0302 adds the authorize-specific columns.
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('decisions').ifNotExists()
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('request_id', c.text, (col) => col.notNull())
    .addColumn('audit_id', c.text, (col) => col.notNull())
    .addColumn('agent', c.text, (col) => col.notNull())
    .addColumn('action', c.text, (col) => col.notNull())
    .addColumn('resource', c.text, (col) => col.notNull())
    .addColumn('amount_minor', c.bigint)
    .addColumn('amount_currency', c.text)
    .addColumn('delegation_depth', c.integer, (col) => col.notNull())
    .addColumn('permit_commitment', c.text)
    .addColumn('request_time', c.text, (col) => col.notNull())
    .addColumn('decision', c.text, (col) => col.notNull())
    .addColumn('reason_code', c.text, (col) => col.notNull())
    .addColumn('policy_version', c.integer)
    .addColumn('matched_rules', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('decisions_project').ifNotExists().on('decisions').columns(['project_id', 'id']).execute();
}
