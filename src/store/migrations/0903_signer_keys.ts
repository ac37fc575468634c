// The public half of each signing key, recorded by the first instance that uses it, so that every
// instance sharing the database verifies against the same key and none signs with another
// (signer/pinned.ts). Keys in use before this migration are recorded at their next use.
import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.createTable('signer_keys')
    .addColumn('name', c.text, (col) => col.primaryKey())
    .addColumn('public_key', c.text, (col) => col.notNull())
    .addColumn('created_at', c.text, (col) => col.notNull())
    .execute();
}
