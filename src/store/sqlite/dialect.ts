// SQLite through better-sqlite3: WAL, synchronous=FULL (a commit is on disk before it returns,
// which invariant 1 relies on; the writer thread uses NORMAL plus WalSync), BEGIN IMMEDIATE so two
// connections never deadlock upgrading locks.
//
// Waiting for the write lock never blocks the thread: SQLite's own busy handler sleeps in place
// (1, 2, 5 … ms) and would stall every request on this event loop while the writer thread commits.
// So busy_timeout is 0 and a statement refused with SQLITE_BUSY is retried after a timer instead.
import BetterSqlite3 from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import { CompiledQuery, SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';

/** How long a statement keeps retrying a lock another connection holds before it fails. */
const BUSY_DEADLINE_MS = 10_000;

/** One SQLite connection with a statement cache; the Kysely driver and the hot paths share it. */
export interface StatementSource { prepare(sql: string): BetterSqlite3.Statement; close(): void }

class RetryingConnection implements DatabaseConnection {
  readonly #db: StatementSource;
  constructor(db: StatementSource) { this.#db = db; }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    let deadline = 0;
    for (let wait = 0.25; ; wait = Math.min(wait * 2, 8)) {
      try {
        return this.#run<R>(query);
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
        deadline ||= Date.now() + BUSY_DEADLINE_MS;
        if (Date.now() > deadline) throw error;
        await sleep(wait);
      }
    }
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
  #db: StatementSource | undefined;
  #connection: RetryingConnection | undefined;
  constructor(open: () => StatementSource) {
    super({ database: undefined as never });
    this.#open = open;
  }
  override async init(): Promise<void> {
    this.#db = this.#open();
    this.#connection = new RetryingConnection(this.#db);
  }
  override async acquireConnection(): Promise<DatabaseConnection> {
    return this.#connection!;
  }
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
  override async destroy(): Promise<void> {
    this.#db?.close();
  }
}

class GavelSqliteDialect extends SqliteDialect {
  readonly #open: () => StatementSource;
  constructor(open: () => StatementSource) {
    super({ database: undefined as never });
    this.#open = open;
  }
  override createDriver(): Driver {
    return new GavelSqliteDriver(this.#open);
  }
}

/** `NORMAL` only for a connection whose commits are made durable by WalSync (the writer thread). */
export type Synchronous = 'FULL' | 'NORMAL';

export function openSqliteDatabase(file: string, synchronous: Synchronous = 'FULL', options: { queryOnly?: boolean } = {}): BetterSqlite3.Database {
  const database = new BetterSqlite3(file);
  if (options.queryOnly) database.pragma('query_only = 1');
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
function withStatementCache(database: BetterSqlite3.Database, max = 1000): StatementSource {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (!stmt) {
        stmt = database.prepare(sql);
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
        cache.set(sql, stmt);
      }
      return stmt;
    },
    close() { cache.clear(); database.close(); },
  };
}

export function openSqliteConnection(file: string, synchronous?: Synchronous, options: { queryOnly?: boolean } = {}): StatementSource {
  return withStatementCache(openSqliteDatabase(file, synchronous, options));
}

export function createSqliteDialect(connection: StatementSource): SqliteDialect {
  return new GavelSqliteDialect(() => connection);
}
