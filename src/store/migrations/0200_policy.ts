// Policy versions, the active-version pointer, and the decisions table (owned by authorize; defined
// here because policy replay reads it and this migration landed first).
import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('policy_versions')
    .addColumn('project_id', c.text, (col) => col.notNull().references('projects.id'))
    .addColumn('version', c.integer, (col) => col.notNull())
    .addColumn('id', c.text, (col) => col.notNull().unique())
    .addColumn('document', c.text, (col) => col.notNull())
    .addColumn('hash', c.text, (col) => col.notNull())
    .addColumn('note', c.text, (col) => col.notNull())
    .addColumn('state', c.text, (col) => col.notNull())
    .addColumn('created_by', c.text, (col) => col.notNull())
    .addColumn('created_via', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('activated_at', c.text)
    .addColumn('activated_by', c.text)
    .addColumn('retired_at', c.text)
    .addPrimaryKeyConstraint('policy_versions_pk', ['project_id', 'version'])
    .execute();

  await db.schema.createTable('policy_active')
    .addColumn('project_id', c.text, (col) => col.primaryKey().references('projects.id'))
    .addColumn('version', c.integer, (col) => col.notNull())
    .addColumn('hash', c.text, (col) => col.notNull())
    .addColumn('activated_at', c.text, (col) => col.notNull())
    .addColumn('activated_by', c.text, (col) => col.notNull())
    .execute();

  await db.schema.createTable('decisions')
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
  await db.schema.createIndex('decisions_project').on('decisions').columns(['project_id', 'id']).execute();
}
