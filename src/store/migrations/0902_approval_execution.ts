// An obligation opened by a request that carries an execution states that call: the merchant, the
// operation and the payload (RFC 8785 text), and only a request making the same call discharges it.
// Obligations opened before this migration state none, and are discharged only without an execution.
import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable('approval_requests').addColumn('execution', columns(dialect).text).execute();
}
