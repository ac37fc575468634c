// SQLite: a counter that every change to what an API key's authentication reads (the key, the
// holder's membership, principal and role grants) bumps, by trigger, whoever makes the change
// (this process, another one, a shell). The machine-route authenticator caches a key's context
// tagged with the counter read before its lookup and trusts it only while the counter is unchanged
// (http/auth/api-key.ts): one tiny read per request instead of the lookup's four, with revocation
// still taking effect on the next request. PostgreSQL keeps the lookup on every request (a shared
// counter row would serialize unrelated transactions there, and saves no round trip).
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../store.ts';

const WATCHED = ['api_keys', 'memberships', 'principals', 'role_grants'] as const;

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  await sql`create table auth_epoch (id integer primary key check (id = 1), n integer not null)`.execute(db);
  await sql`insert into auth_epoch (id, n) values (1, 0)`.execute(db);
  for (const table of WATCHED) {
    for (const event of ['insert', 'update', 'delete'] as const) {
      await sql.raw(`create trigger ${table}_${event}_auth_epoch after ${event} on ${table}
        begin update auth_epoch set n = n + 1 where id = 1; end`).execute(db);
    }
  }
}
