// SQLite through better-sqlite3: WAL, BEGIN IMMEDIATE so two connections never deadlock upgrading
// locks. Durability (invariant 1) never blocks a thread on the disk: connections commit with
// synchronous=NORMAL, and on the store's own connection a statement that leaves the database
// outside a transaction after writing (COMMIT, or a write in autocommit mode) resolves only once an
// fdatasync of the WAL begun after it has finished (WalSync, on libuv's pool). The writer thread's
// connection does not wait: that thread flushes each batch itself before answering (services/writer/worker.ts).
//
// Waiting for the write lock never blocks the thread: SQLite's own busy handler sleeps in place
// (1, 2, 5 … ms) and would stall every request on this event loop while the writer thread commits.
// So busy_timeout is 0 and a statement refused with SQLITE_BUSY is retried after a timer instead.
import BetterSqlite3 from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import { CompiledQuery, SqliteAdapter, SqliteDialect, SqliteDriver, type DatabaseConnection, type DialectAdapter, type Driver, type QueryResult } from 'kysely';

/** How long a statement keeps retrying a lock another connection holds before it fails. */
const BUSY_DEADLINE_MS = 10_000;

/**
 * What SQLITE_BUSY means once BUSY_DEADLINE_MS has run out, said to an operator: Gavel's own
 * transactions hold the write lock for milliseconds, so another process has kept a transaction open
 * (decision 0028, addendum). SQLite says only "database is locked".
 */
export function writeLockHeld(database: string): string {
  return `another process is writing to ${database}: it has held the database's write lock for over ${BUSY_DEADLINE_MS / 1000} s (a gavel serve, up or migrate applying migrations? an sqlite3 shell or another tool with a transaction open?): let it finish, or end its transaction, then run this again`;
}

/**
 * Runs `fn`; while SQLite refuses it with SQLITE_BUSY (another connection holds the lock it needs),
 * tries again after a timer (0.25 ms doubling to 8 ms) for up to `deadlineMs`.
 */
export async function retryWhileBusy<T>(fn: () => T, deadlineMs: number): Promise<T> {
  let deadline = 0;
  for (let wait = 0.25; ; wait = Math.min(wait * 2, 8)) {
    try {
      return fn();
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
      // performance.now(): a wall clock stepped back would keep a statement retrying for the step.
      deadline ||= performance.now() + deadlineMs;
      if (performance.now() > deadline) throw error;
      await sleep(wait);
    }
  }
}

/** One SQLite connection with a statement cache; the Kysely driver and the hot paths share it. */
export interface StatementSource { prepare(sql: string): BetterSqlite3.Statement; close(): void; readonly inTransaction: boolean }

class RetryingConnection implements DatabaseConnection {
  readonly #db: StatementSource;
  readonly #durable: (() => Promise<void>) | undefined;
  constructor(db: StatementSource, durable?: () => Promise<void>) { this.#db = db; this.#durable = durable; }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await retryWhileBusy(() => this.#run<R>(query), BUSY_DEADLINE_MS);
    // A write that is now committed (COMMIT, or autocommit): answer once it is on disk.
    if (this.#durable && result.numAffectedRows !== undefined && !this.#db.inTransaction) await this.#durable();
    return result;
  }

  #run<R>({ sql, parameters }: CompiledQuery): QueryResult<R> {
    const stmt = this.#db.prepare(sql);
    if (stmt.reader) return { rows: stmt.all(parameters as unknown[]) as R[] };
    const { changes, lastInsertRowid } = stmt.run(parameters as unknown[]);
    return { insertId: BigInt(lastInsertRowid), numAffectedRows: BigInt(changes), rows: [] };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not used with SQLite');
  }
}

class GavelSqliteDriver extends SqliteDriver {
  readonly #open: () => StatementSource;
  readonly #durable: (() => Promise<void>) | undefined;
  #db: StatementSource | undefined;
  #connection: RetryingConnection | undefined;
  constructor(open: () => StatementSource, durable?: () => Promise<void>) {
    super({ database: undefined as never });
    this.#open = open;
    this.#durable = durable;
  }
  override async init(): Promise<void> {
    this.#db = this.#open();
    this.#connection = new RetryingConnection(this.#db, this.#durable);
  }
  override async acquireConnection(): Promise<DatabaseConnection> {
    return this.#connection!;
  }
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
  // SQLite ends the transaction itself on some errors (SQLITE_FULL, an I/O error): a ROLLBACK then
  // fails with "no transaction is active", which Kysely would throw in place of the error that
  // says what went wrong (a full disk, at a migration, was reported as that).
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#db?.inTransaction === false) return;
    await super.rollbackTransaction(connection);
  }
  override async destroy(): Promise<void> {
    this.#db?.close();
  }
}

/**
 * SQLite's DDL is transactional (CREATE, ALTER, DROP and the data they move roll back with the
 * transaction), which Kysely's adapter does not claim. Claiming it makes the migrator apply the
 * pending migrations and record them in `kysely_migration` in one transaction, as on PostgreSQL:
 * a process killed mid-migration leaves the database as it was, not with half a migration applied
 * and unrecorded, which the next start would fail to apply again ("table … already exists").
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean { return true; }
}

class GavelSqliteDialect extends SqliteDialect {
  readonly #open: () => StatementSource;
  readonly #durable: (() => Promise<void>) | undefined;
  constructor(open: () => StatementSource, durable?: () => Promise<void>) {
    super({ database: undefined as never });
    this.#open = open;
    this.#durable = durable;
  }
  override createDriver(): Driver {
    return new GavelSqliteDriver(this.#open, this.#durable);
  }
  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/** `NORMAL` only for a connection whose commits are made durable by WalSync (the writer thread). */
export type Synchronous = 'FULL' | 'NORMAL';

/**
 * Page size of a database this process creates (docs/decisions/0014-sqlite-pages-for-syscalls.md,
 * which supersedes 0010's 1 KiB). SQLite writes each WAL frame with two pwrite calls and copies
 * each page with its own read and write at a checkpoint, so a commit's cost follows the number of
 * pages it touches: 4 KiB pages cut the writer's CPU per decision by about a fifth, for more bytes
 * written at low rates. It must be set before the file's first write; a database that exists
 * keeps its own page size, whatever this says.
 */
export const NEW_DATABASE_PAGE_SIZE = 4096;

export function openSqliteDatabase(file: string, synchronous: Synchronous = 'FULL', options: { queryOnly?: boolean } = {}): BetterSqlite3.Database {
  const database = new BetterSqlite3(file);
  if (options.queryOnly) database.pragma('query_only = 1');
  else database.pragma(`page_size = ${NEW_DATABASE_PAGE_SIZE}`);
  database.pragma('journal_mode = WAL');
  database.pragma(`synchronous = ${synchronous}`);
  database.pragma('busy_timeout = 0');
  database.pragma('foreign_keys = ON');
  return database;
}

/**
 * Kysely prepares every query afresh; preparing costs more than running most of ours. Queries are
 * parameterized, so the SQL text is a good cache key. Statements are used one at a time (Kysely
 * serializes the single connection), so sharing them is safe.
 */
export function withStatementCache(database: BetterSqlite3.Database, max = 1000): StatementSource & { readonly cached: number } {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (!stmt) {
        stmt = database.prepare(sql);
        if (parametersOf(sql) > MAX_CACHED_PARAMETERS) return stmt;
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
        cache.set(sql, stmt);
      }
      return stmt;
    },
    get cached() { return cache.size; },
    close() { cache.clear(); database.close(); },
    get inTransaction() { return database.inTransaction; },
  };
}

/**
 * A statement with more parameters than this (an `in` list as long as a page, a replay's commitments)
 * is prepared each time it runs, never cached: each length of a list is a statement of its own, and
 * any caller could fill the cache with them (1,000 of 1 to 1,000 parameters held about 100 MB of
 * native memory). Every statement of the hot path has at most as many: the tree's insert of 32
 * nodes (auditlog/frontier.ts) has 128.
 */
export const MAX_CACHED_PARAMETERS = 128;

/** `?` placeholders in a statement's text (Kysely writes no literal holding one). */
function parametersOf(sql: string): number {
  let n = 0;
  for (let i = sql.indexOf('?'); i !== -1; i = sql.indexOf('?', i + 1)) n++;
  return n;
}

export function openSqliteConnection(file: string, synchronous?: Synchronous, options: { queryOnly?: boolean } = {}): StatementSource {
  return withStatementCache(openSqliteDatabase(file, synchronous, options));
}

/** `durable`: what a committed write awaits before it resolves (undefined: nothing, the caller flushes). */
export function createSqliteDialect(connection: StatementSource, durable?: () => Promise<void>): SqliteDialect {
  return new GavelSqliteDialect(() => connection, durable);
}
