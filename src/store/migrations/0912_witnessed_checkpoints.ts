// The newest witnessed checkpoint, read newest first among all checkpoints, walked back over every
// checkpoint the witness has not cosigned: all of them when no witness is configured, every one
// since an outage began otherwise. A checkpoint is signed each second the log grows (default
// interval), so that walk grows as the log does: at 200,000 checkpoints, 67 ms on SQLite and a
// parallel sequential scan of 40 ms on PostgreSQL, for the dashboard, GET /audit/log, each
// verification, and on the audit leader's every tick (100 ms) while the witness is unreachable.
// A partial index holds only the witnessed checkpoints. The table is written by the checkpointer
// once a checkpoint and once a cosignature, never by a decision.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index audit_checkpoints_witnessed on audit_checkpoints (size) where witnessed_at is not null`.execute(db);
}
