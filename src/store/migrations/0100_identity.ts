// Identity: console sessions (only a hash of the token is stored), login throttle counters shared
// by every instance, and each project's separation-of-duties document.
import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('sessions')
    .addColumn('id', c.text, (col) => col.primaryKey())
    .addColumn('token_hash', c.text, (col) => col.notNull().unique())
    .addColumn('principal_id', c.text, (col) => col.notNull().references('principals.id'))
    .addColumn('created_at', c.text, (col) => col.notNull())
    .addColumn('last_seen_at', c.text, (col) => col.notNull())
    .addColumn('expires_at', c.text, (col) => col.notNull())
    .addColumn('ended_at', c.text)
    .addColumn('ended_reason', c.text)
    .execute();
  await db.schema.createIndex('sessions_principal').on('sessions').columns(['principal_id']).execute();

  await db.schema.createTable('login_throttle')
    .addColumn('key', c.text, (col) => col.primaryKey())
    .addColumn('failures', c.bigint, (col) => col.notNull())
    .addColumn('window_start', c.text, (col) => col.notNull())
    .addColumn('locked_until', c.text)
    .execute();

  await db.schema.createTable('sod_settings')
    .addColumn('project_id', c.text, (col) => col.primaryKey().references('projects.id'))
    .addColumn('document', c.text, (col) => col.notNull())
    .addColumn('updated_at', c.text, (col) => col.notNull())
    .addColumn('updated_by', c.text, (col) => col.notNull())
    .execute();

  await db.schema.createIndex('memberships_principal').on('memberships').columns(['principal_id']).execute();
}
