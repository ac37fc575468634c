import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.alterTable('decisions').addColumn('intent', c.text).execute();
  await db.schema.alterTable('decisions').addColumn('approval_request_id', c.text).execute();

  await db.schema.createTable('approval_requests')
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('decision_id', c.text, (col) => col.notNull())
    .addColumn('agent', c.text, (col) => col.notNull())
    .addColumn('action', c.text, (col) => col.notNull())
    .addColumn('resource', c.text, (col) => col.notNull())
    .addColumn('amount_minor', c.bigint)
    .addColumn('amount_currency', c.text)
    .addColumn('intent', c.text)
    .addColumn('permit_commitment', c.text)
    .addColumn('policy_version', c.integer, (col) => col.notNull())
    .addColumn('matched_rules', c.text, (col) => col.notNull())
    .addColumn('status', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('expires_at', c.text, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('approval_requests_project').on('approval_requests').columns(['project_id', 'id']).execute();
}
