import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('projects')
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('name', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .execute();

  await db.schema.createTable('principals')
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('kind', c.text, (col) => col.notNull())
    .addColumn('name', c.text, (col) => col.notNull().unique())
    .addColumn('password_hash', c.text)
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('disabled_at', c.text)
    .execute();

  await db.schema.createTable('memberships')
    .addColumn('project_id', c.text, (col) => col.notNull().references('projects.id'))
    .addColumn('principal_id', c.text, (col) => col.notNull().references('principals.id'))
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('created_by', c.text)
    .addColumn('revoked_at', c.text)
    .addPrimaryKeyConstraint('memberships_pk', ['project_id', 'principal_id'])
    .execute();

  await db.schema.createTable('role_grants')
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('principal_id', c.text, (col) => col.notNull())
    .addColumn('role', c.text, (col) => col.notNull())
    .addColumn('granted_at', c.text, (col) => col.notNull())
    .addColumn('granted_by', c.text)
    .addPrimaryKeyConstraint('role_grants_pk', ['project_id', 'principal_id', 'role'])
    .execute();

  await db.schema.createTable('api_keys')
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('project_id', c.text, (col) => col.notNull().references('projects.id'))
    .addColumn('principal_id', c.text, (col) => col.notNull().references('principals.id'))
    .addColumn('name', c.text, (col) => col.notNull())
    .addColumn('secret_hash', c.text, (col) => col.notNull().unique())
    .addColumn('roles', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('created_by', c.text, (col) => col.notNull())
    .addColumn('revoked_at', c.text)
    .addColumn('revoked_by', c.text)
    .execute();
  await db.schema.createIndex('api_keys_project').on('api_keys').columns(['project_id', 'id']).execute();

  await db.schema.createTable('audit_events')
    .addColumn('seq', c.serial, (col) => (dialect === 'postgres' ? col.primaryKey() : col.primaryKey().autoIncrement()))
    .addColumn('id', c.text, (col) => col.notNull().unique())
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('kind', c.text, (col) => col.notNull())
    .addColumn('actor', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('data', c.text, (col) => col.notNull())
    .addColumn('leaf_index', c.bigint, (col) => col.unique())
    .execute();
  await db.schema.createIndex('audit_events_project').on('audit_events').columns(['project_id', 'id']).execute();

  await db.schema.createTable('settings')
    .addColumn('key', c.text, (col) => col.primaryKey())
    .addColumn('value', c.text, (col) => col.notNull())
    .execute();
}
