// The statement an approver signs names the rules that asked for approval (docs/approvals.md,
// decision 0505). Obligations opened before this migration keep the statement they were signed
// over (version 1, without the rules); those opened after it carry version 2.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { columns } from '../columns.ts';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable('approval_requests').addColumn('statement_version', columns(dialect).integer, (col) => col.notNull().defaultTo(sql`1`)).execute();
}
