// A witness problem was counted as put right when the newest cosignature was stamped at or after
// it; a cosignature now deletes it (services/auditlog/checkpointer.ts: a clock stepped back between
// the two inverted the comparison). Problems already put right by the old reading go now.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.deleteFrom('audit_witness_problem')
    .where('at', '<=', sql<string>`(select witnessed_at from audit_checkpoints where witnessed_at is not null order by size desc limit 1)`)
    .execute();
}
