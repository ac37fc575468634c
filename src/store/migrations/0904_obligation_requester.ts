// An obligation names the API key whose request opened it, so the person who holds that key cannot
// approve it (docs/approvals.md, decision 0504). Obligations opened before this migration name none.
import type { Kysely } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable('approval_requests').addColumn('requested_by', columns(dialect).text).execute();
}
