// One store interface over two engines: SQLite (embedded default) and PostgreSQL (scale-out).
// Callers write Kysely queries; engine differences live in the dialect setup and in columns.ts.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, sql, type Transaction } from 'kysely';
import type { Database } from './schema/index.ts';
import { createSqliteDialect, openSqliteConnection, type StatementSource, type Synchronous } from './sqlite/dialect.ts';
import { createPostgresDialect } from './postgres/dialect.ts';

export type Dialect = 'sqlite' | 'postgres';
export type Tx = Transaction<Database>;
export type Db = Kysely<Database>;

export interface Store {
  readonly db: Db;
  readonly dialect: Dialect;
  /** The SQLite database file (another connection, such as the writer thread's, opens it too). */
  readonly file?: string;
  /**
   * SQLite: the very connection Kysely uses, for fixed statements on hot paths (store/fixed-sql.ts)
   * without the query builder's cost; inside a transaction they run in that transaction.
   */
  readonly raw?: StatementSource;
  /**
   * SQLite: a third connection for the hot path's single-statement reads (API key, active policy
   * pointer), outside any transaction (`query_only`): they never queue behind this thread's write
   * transactions on the Kysely connection, nor pay the query builder. See readFixed.
   */
  readonly reader?: StatementSource;
  /** Runs `fn` in one transaction; on SQLite it takes the write lock at BEGIN (IMMEDIATE). */
  transaction<T>(fn: (trx: Tx) => Promise<T>): Promise<T>;
  /** True when the database answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export type StoreOptions =
  | { kind: 'sqlite'; file: string; synchronous?: Synchronous; /** Open the reader connection (default true). */ reader?: boolean }
  | { kind: 'postgres'; url: string; schema?: string; poolSize?: number };

export function openStore(options: StoreOptions): Store {
  let db: Db;
  let raw: StatementSource | undefined;
  let reader: StatementSource | undefined;
  if (options.kind === 'sqlite') {
    if (options.file !== ':memory:') mkdirSync(dirname(options.file), { recursive: true });
    raw = openSqliteConnection(options.file, options.synchronous);
    // An in-memory database is private to its connection: reads go through Kysely there.
    if (options.file !== ':memory:' && options.reader !== false) reader = openSqliteConnection(options.file, options.synchronous, { queryOnly: true });
    db = new Kysely<Database>({ dialect: createSqliteDialect(raw) });
  } else {
    db = new Kysely<Database>({ dialect: createPostgresDialect(options) });
  }
  let closed = false;
  return {
    db,
    dialect: options.kind,
    ...(options.kind === 'sqlite' ? { file: options.file, raw, ...(reader ? { reader } : {}) } : {}),
    transaction: (fn) => db.transaction().execute(fn),
    async ping() {
      try { await sql`select 1`.execute(db); return true; } catch { return false; }
    },
    async close() {
      if (closed) return;
      closed = true;
      reader?.close();
      await db.destroy();
    },
  };
}

/** Rows changed by an update/delete, the same way on both engines. */
export function affected(result: { numUpdatedRows?: bigint; numDeletedRows?: bigint } | readonly { numUpdatedRows?: bigint; numDeletedRows?: bigint }[]): number {
  const r = Array.isArray(result) ? result[0] : result;
  return Number(r?.numUpdatedRows ?? r?.numDeletedRows ?? 0n);
}

/**
 * Serializes transactions that name the same lock until commit. SQLite's BEGIN IMMEDIATE already
 * serializes every writer; PostgreSQL takes a transaction-scoped advisory lock.
 */
export async function lockFor(trx: Tx, dialect: Dialect, name: string): Promise<void> {
  if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${name}))`.execute(trx);
}
