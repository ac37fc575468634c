// Each instance states the longest timeout of its own merchants beside its heartbeat: a sweep judges
// a live instance's call too old by that owner's timeout, not its own (services/executions/recovery.ts).
// Instances sharing a database may hold different merchants files; a sweeper with shorter timeouts
// marked calls UNKNOWN that their owner's merchant was still allowed to answer. Null: not stated.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('execution_instances').addColumn('max_timeout_ms', 'integer').execute();
}
