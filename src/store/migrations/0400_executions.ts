import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('executions')
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('nonce', c.text, (col) => col.notNull())
    .addColumn('fingerprint', c.text, (col) => col.notNull())
    .addColumn('decision_id', c.text, (col) => col.notNull())
    .addColumn('decision_audit_id', c.text, (col) => col.notNull())
    .addColumn('policy_version', c.integer)
    .addColumn('agent', c.text, (col) => col.notNull())
    .addColumn('action', c.text, (col) => col.notNull())
    .addColumn('resource', c.text, (col) => col.notNull())
    .addColumn('merchant', c.text, (col) => col.notNull())
    .addColumn('operation', c.text, (col) => col.notNull())
    .addColumn('status', c.text, (col) => col.notNull())
    .addColumn('note', c.text)
    .addColumn('http_status', c.integer)
    .addColumn('instance_id', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('completed_at', c.text)
    .addColumn('resolved_at', c.text)
    .addColumn('resolved_by', c.text)
    .addColumn('resolution_note', c.text)
    .execute();
  // The nonce reservation: the unique index is what holds under concurrency on both engines.
  await db.schema.createIndex('executions_nonce').unique().on('executions').columns(['project_id', 'nonce']).execute();
  await db.schema.createIndex('executions_project').on('executions').columns(['project_id', 'id']).execute();
  await db.schema.createIndex('executions_status').on('executions').columns(['status', 'instance_id']).execute();
  await db.schema.createTable('execution_instances')
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('started_at', c.text, (col) => col.notNull())
    .addColumn('heartbeat_at', c.text, (col) => col.notNull())
    .execute();
}
