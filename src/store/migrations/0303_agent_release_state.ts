// An agent's state says since when and by whom on both sides: who froze it and when, or who
// released it and when (null for an agent never frozen). Releasing used to clear the freeze's
// columns and leave the state without either.
import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const c = columns(dialect);
  await db.schema.alterTable('agents').addColumn('released_at', c.text).execute();
  await db.schema.alterTable('agents').addColumn('released_by', c.text).execute();
}
