// PostgreSQL through node-postgres. BIGINT (int8) comes back as a JS number: every stored integer
// is bounded by 2^53-1 at the edge (money, counters), so the conversion is exact.
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { PostgresAdapter, PostgresDialect, sql, type DatabaseIntrospector, type DialectAdapter, type Kysely, type MigrationLockOptions, type SchemaMetadata, type TableMetadata } from 'kysely';
import { databaseUnreachable } from '../unreachable.ts';
import { preparedStatementName } from '../fixed-sql.ts';
import { parseJsonExactly } from '../../lib/json-parse.ts';

pg.types.setTypeParser(20, (value: string) => Number(value));
// json and jsonb columns: member names exactly as stored (lib/json-parse.ts: V8's JSON.parse can misread escaped ones).
pg.types.setTypeParser(114, parseJsonExactly);
pg.types.setTypeParser(3802, parseJsonExactly);

/** How long a query waits for a pooled connection (a free one, or a new one's handshake) before it fails (503). */
export const CONNECT_TIMEOUT_MS = 10_000;
/**
 * How long the server lets one of our sessions sit idle inside a transaction before it ends it.
 * Gavel's transactions wait on nothing but the database (merchants, witnesses, signing and
 * password hashing happen outside them), so only an instance cut off mid-transaction (a network
 * partition, a paused process or VM) idles there; its locks (a freeze's table lock, an agent's or
 * a budget's row) would otherwise stall every other instance until TCP keepalive gave up, hours.
 */
export const IDLE_IN_TRANSACTION_MS = 10_000;

/**
 * How long a statement may go unanswered before its connection is taken for dead and destroyed
 * (the statement fails: 503 database_unavailable for a request). A path that drops packets without
 * a reset (a partition, a lost NAT entry) otherwise holds the statement, and the requests queued
 * behind the pool, until the kernel gives up on the socket: with bytes unacknowledged,
 * retransmission lasts about 15 minutes, and keepalive never fires. Every statement of a healthy
 * instance answers within it: transactions are short and lock waits end when another instance's
 * transaction does, or after IDLE_IN_TRANSACTION_MS for one cut off. Migrations are exempt
 * (withoutReplyTimeout).
 */
export const REPLY_TIMEOUT_MS = 30_000;

/** How often the server checks, while a statement of ours runs, that our end of its connection is still open. */
const CLIENT_CHECK_INTERVAL_MS = 1_000;

const unbounded = new AsyncLocalStorage<true>();
/** Runs `fn` with its statements free of the reply timeout: for those that legitimately run long. */
export const withoutReplyTimeout = <T>(fn: () => Promise<T>): Promise<T> => unbounded.run(true, fn);

/** The error a statement fails with when its connection is destroyed for want of an answer. */
const noReply = (ms: number) => Object.assign(new Error(`Connection timed out: the database did not answer within ${ms} ms`), { code: 'ETIMEDOUT' });

export function createPostgresDialect(options: { url: string; schema?: string; poolSize?: number; connectTimeoutMs?: number; idleInTransactionMs?: number; replyTimeoutMs?: number }): PostgresDialect {
  const idleInTransactionMs = Math.max(1, Math.round(options.idleInTransactionMs ?? IDLE_IN_TRANSACTION_MS));
  const replyTimeoutMs = options.replyTimeoutMs ?? REPLY_TIMEOUT_MS;
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    // A database that stops answering (a network partition, a paused host) must not hold requests
    // forever: waiting for a connection is bounded (the error is 503 database_unavailable), and TCP
    // keepalives let the kernel notice a dead peer on an idle connection.
    connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    keepAlive: true,
    // Without a delay Node keeps the OS default (two hours) before the first probe.
    keepAliveInitialDelayMillis: 10_000,
    // Named in pg_stat_activity, by schema when it has one of its own (what an operator, or a test, looks for).
    application_name: options.schema ? `gavel/${options.schema}` : 'gavel',
    // A test run or a tenant can live in its own schema.
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // A client losing its connection must not crash the process: idle ones are reported on the pool,
  // which replaces them; one checked out (a request's, or the audit log leader's held connection)
  // on the client itself, and the query it runs fails (503 for a request, readiness answers 503,
  // the leader gives up its lock). The pool drops a client that errored when it comes back.
  pool.on('error', () => {});
  // Statements declared prepared (store/fixed-sql.ts) run by name: planned once per connection.
  // Kysely sends every query as (text, parameters); the text alone says which ones they are.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    // Invariant 1 on PostgreSQL is its commit reaching disk: a server or database that defaults to
    // synchronous_commit = off would answer commits a crash can still lose. Raised to on for this
    // session only where it is off (a stronger setting, remote_apply say, is left as it is). The
    // statement is queued before any the pool's user sends on this client. If it fails, the client
    // is closed: the queries queued behind it fail (503 for a request) rather than commit unflushed.
    // The same statement bounds idle time in a transaction (IDLE_IN_TRANSACTION_MS) unless the
    // server's own bound is shorter: set here, not as a startup parameter, which poolers refuse.
    // A statement given up on (REPLY_TIMEOUT_MS) has its socket closed, but the server notices that
    // only when it next reads or writes it: one waiting for a lock another client holds (an
    // operator's open transaction, say) stayed queued for as long as that lock was held, one more
    // session per timeout until max_connections, and then ran, committing a decision answered 503.
    // With client_connection_check_interval (PostgreSQL 14 and later) the server ends such a
    // session within a second, its statement rolled back. A server whose platform cannot check
    // refuses the setting: the block below swallows that, and the connection is kept without it.
    // One simple-protocol message (no parameters: the numbers are ours), sent as one statement was.
    void client.query(`select case when current_setting('synchronous_commit') = 'off' then set_config('synchronous_commit', 'on', false) end,
      case when setting::bigint = 0 or setting::bigint > ${idleInTransactionMs} then set_config('idle_in_transaction_session_timeout', '${idleInTransactionMs}', false) end
      from pg_settings where name = 'idle_in_transaction_session_timeout';
      do $$ begin
        perform set_config('client_connection_check_interval', '${CLIENT_CHECK_INTERVAL_MS}', false)
          from pg_settings where name = 'client_connection_check_interval' and setting::bigint = 0;
      exception when others then null;
      end $$`)
      .catch(() => client.end().catch(() => {}));
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (text: unknown, values?: unknown, ...rest: unknown[]) => {
      const name = typeof text === 'string' ? preparedStatementName(text) : undefined;
      const answer = name ? query({ name, text, values }, ...rest) : query(text, values, ...rest);
      // A callback-style call (none of ours) returns nothing to bound.
      return answer instanceof Promise && !unbounded.getStore() ? bounded(client, answer, replyTimeoutMs) : answer;
    };
  });
  return new OwnSchemaDialect({ pool });
}

/**
 * The statement's answer, unless none comes within `ms`: then the connection is destroyed (not
 * node-postgres's query_timeout, which fails the query but leaves the connection, its reply still
 * owed, to go back to the pool and hold every later query). The statement fails with the
 * connection, as on any lost connection: a COMMIT whose answer never came is unconfirmed, not
 * failed (decision 0013 addendum, session 34). The pool drops the broken client on release.
 */
function bounded(client: pg.PoolClient, answer: Promise<unknown>, ms: number): Promise<unknown> {
  const timer = setTimeout(() => (client as unknown as { connection: { stream: { destroy(e: Error): void } } }).connection.stream.destroy(noReply(ms)), ms);
  return answer.finally(() => clearTimeout(timer));
}

/**
 * Kysely's PostgreSQL introspector (which its migrator uses to find its own tables) scans every
 * schema in the database and resolves each table and column by name, so another tenant or test run
 * dropping a schema mid-scan fails our migration. Ours looks only at the current schema (the first
 * on the search_path, where this store's tables live) and lists table names, all the migrator reads.
 */
class OwnSchemaDialect extends PostgresDialect {
  override createAdapter(): DialectAdapter {
    return new MigrationLockAdapter();
  }
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return {
      async getSchemas(): Promise<SchemaMetadata[]> {
        return (await sql<SchemaMetadata>`select current_schema() as name`.execute(db)).rows;
      },
      async getTables(): Promise<TableMetadata[]> {
        const rows = (await sql<{ name: string; kind: string; schema: string }>`
          select c.relname as name, c.relkind as kind, n.nspname as schema
          from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
          where n.nspname = current_schema() and c.relkind in ('r', 'v', 'p', 'f')
          order by c.relname`.execute(db)).rows;
        return rows.map((r) => ({ name: r.name, schema: r.schema, isView: r.kind === 'v', isForeign: r.kind === 'f', columns: [] }));
      },
    };
  }
}

/**
 * Kysely releases its migration lock (a session-level advisory lock) in a `finally`, so an unlock
 * that fails replaces the error that ended the migration run. It fails only on a session that is
 * gone or going: the connection was lost (the server ended the session, which releases the lock
 * with it), or Kysely marked it discarded after a failed ROLLBACK (the pool destroys a discarded
 * connection when it is released, which ends the session and its lock). There is nothing left to
 * release in either case, so the error that says what happened is the one kept. Used only by the
 * migrator (store/migrate.ts).
 */
class MigrationLockAdapter extends PostgresAdapter {
  override async releaseMigrationLock(db: Kysely<any>, options: MigrationLockOptions): Promise<void> {
    try {
      await super.releaseMigrationLock(db, options);
    } catch (error) {
      if (!databaseUnreachable(error) && (error as Error).message !== DISCARDED) throw error;
    }
  }
}
/** Kysely's error for a statement on a connection it marked for discard (kysely/dist/dialect/postgres/postgres-driver.js). */
const DISCARDED = 'Postgres connection has been discarded';
