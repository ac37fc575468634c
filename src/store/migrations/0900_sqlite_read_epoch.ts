// SQLite: a counter that every change to what the decision path reads before its transaction (an
// API key, the holder's membership, principal and role grants, a project's active-policy pointer)
// bumps, by trigger, whoever makes the change (this process, another one, a shell). The machine-
// route authenticator caches a key's context, and the decision path a project's policy pointer,
// tagged with the counter read before their lookup, and trusts them only while it is unchanged
// (http/auth/api-key.ts, services/policy/active.ts): one tiny read per request instead of two
// lookups, with a revocation or an activation still taking effect on the next request.
// PostgreSQL has no epoch (a shared counter row would serialize, and could deadlock, the
// transactions that change those tables): its decisions re-check at commit (decision 0011).
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../store.ts';

const WATCHED = ['api_keys', 'memberships', 'principals', 'role_grants', 'policy_active'] as const;

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  await sql`create table read_epoch (id integer primary key check (id = 1), n integer not null)`.execute(db);
  await sql`insert into read_epoch (id, n) values (1, 0)`.execute(db);
  for (const table of WATCHED) {
    for (const event of ['insert', 'update', 'delete'] as const) {
      await sql.raw(`create trigger ${table}_${event}_read_epoch after ${event} on ${table}
        begin update read_epoch set n = n + 1 where id = 1; end`).execute(db);
    }
  }
}
