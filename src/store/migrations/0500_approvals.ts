import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('approval_keys')
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('principal_id', c.text, (col) => col.notNull())
    .addColumn('public_key', c.text, (col) => col.notNull())
    .addColumn('name', c.text)
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('created_by', c.text, (col) => col.notNull())
    .addColumn('retired_at', c.text)
    .addColumn('retired_by', c.text)
    .execute();
  // One registration of a key per project, live or retired: a retired key is never re-registered.
  await db.schema.createIndex('approval_keys_public_key').on('approval_keys').columns(['project_id', 'public_key']).unique().execute();
  await db.schema.createIndex('approval_keys_principal').on('approval_keys').columns(['project_id', 'principal_id']).execute();

  await db.schema.createTable('approvals')
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('approval_request_id', c.text, (col) => col.notNull().unique())
    .addColumn('key_id', c.text, (col) => col.notNull())
    .addColumn('principal_id', c.text, (col) => col.notNull())
    .addColumn('signature', c.text, (col) => col.notNull())
    .addColumn('recorded_by', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('revoked_at', c.text)
    .addColumn('revoked_by', c.text)
    .addColumn('revoke_reason', c.text)
    .addColumn('consumed_at', c.text)
    .addColumn('consumed_by_decision', c.text)
    .execute();
  await db.schema.createIndex('approval_requests_status').on('approval_requests').columns(['project_id', 'status', 'id']).execute();
}
