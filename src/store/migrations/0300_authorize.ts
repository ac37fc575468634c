import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('agents')
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('did', c.text, (col) => col.notNull())
    .addColumn('name', c.text)
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('created_by', c.text, (col) => col.notNull())
    .addColumn('frozen_at', c.text)
    .addColumn('frozen_by', c.text)
    .addColumn('frozen_reason', c.text)
    .addPrimaryKeyConstraint('agents_pk', ['project_id', 'did'])
    .execute();

  await db.schema.createTable('permits')
    .addColumn('commitment', c.text, (col) => col.primaryKey())
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('agent', c.text, (col) => col.notNull())
    .addColumn('jws', c.text)
    .addColumn('parent', c.text)
    .addColumn('claims', c.text, (col) => col.notNull())
    .addColumn('issued_by', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('expires_at', c.text, (col) => col.notNull())
    .addColumn('revoked_at', c.text)
    .addColumn('revoked_by', c.text)
    .execute();
  await db.schema.createIndex('permits_project').on('permits').columns(['project_id', 'created_at']).execute();
  await db.schema.createIndex('permits_parent').on('permits').column('parent').execute();

  await db.schema.createTable('permit_usage')
    .addColumn('commitment', c.text, (col) => col.primaryKey())
    .addColumn('project_id', c.text, (col) => col.notNull())
    .addColumn('spent_minor', c.bigint, (col) => col.notNull().defaultTo(0))
    .addColumn('currency', c.text)
    .addColumn('uses', c.bigint, (col) => col.notNull().defaultTo(0))
    .execute();
}
