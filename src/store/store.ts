// One store interface over two engines: SQLite (embedded default) and PostgreSQL (scale-out).
// Callers write Kysely queries; engine differences live in the dialect setup and in columns.ts.
import { dirname } from 'node:path';
import { Kysely, sql, type Transaction } from 'kysely';
import type { Database } from './schema/index.ts';
import { createSqliteDialect, openSqliteConnection, type StatementSource } from './sqlite/dialect.ts';
import { WalSync } from './sqlite/wal-sync.ts';
import { createPostgresDialect } from './postgres/dialect.ts';
import { SpaceWatch } from './space.ts';
import { makeDirectory } from '../lib/durable-fs.ts';

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
  /** Whether writes are failing for want of space (store/space.ts): marked by the HTTP layer, cleared by the writer. */
  readonly space: SpaceWatch;
  /** Runs `fn` in one transaction; on SQLite it takes the write lock at BEGIN (IMMEDIATE). */
  transaction<T>(fn: (trx: Tx) => Promise<T>): Promise<T>;
  /** True when the database answers a trivial query within `timeoutMs` (default 2 s). */
  ping(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * SQLite durability (dialect.ts): `flush` (default) commits with synchronous=NORMAL and resolves a
 * committed write only after an fdatasync of the WAL (WalSync, off this thread); `caller` commits
 * with NORMAL and leaves the flush to the caller (the writer thread, which flushes each batch); `full` is SQLite's own
 * blocking synchronous=FULL.
 */
export type SqliteDurability = 'flush' | 'caller' | 'full';

export type StoreOptions =
  | {
    kind: 'sqlite'; file: string; durability?: SqliteDurability;
    /** Open the reader connection (default true). */ reader?: boolean;
    /** Tests: stands in for the WalSync flush of `flush` durability. */ durable?: () => Promise<void>;
  }
  | { kind: 'postgres'; url: string; schema?: string; poolSize?: number; connectTimeoutMs?: number; idleInTransactionMs?: number; replyTimeoutMs?: number };

export function openStore(options: StoreOptions): Store {
  let db: Db;
  let raw: StatementSource | undefined;
  let reader: StatementSource | undefined;
  let wal: WalSync | undefined;
  if (options.kind === 'sqlite') {
    const inMemory = options.file === ':memory:';
    if (!inMemory) makeDirectory(dirname(options.file));
    const durability = inMemory ? 'full' : options.durability ?? 'flush';
    const synchronous = durability === 'full' ? 'FULL' : 'NORMAL';
    raw = openSqliteConnection(options.file, synchronous);
    // An in-memory database is private to its connection: reads go through Kysely there.
    if (!inMemory && options.reader !== false) reader = openSqliteConnection(options.file, synchronous, { queryOnly: true });
    let durable: (() => Promise<void>) | undefined;
    if (durability === 'flush') {
      if (options.durable) durable = options.durable;
      else { const w = new WalSync(options.file); wal = w; durable = () => w.durable(); }
    }
    db = new Kysely<Database>({ dialect: createSqliteDialect(raw, durable) });
  } else {
    db = new Kysely<Database>({ dialect: createPostgresDialect(options) });
  }
  let closed = false;
  const space = new SpaceWatch();
  return {
    db,
    dialect: options.kind,
    space,
    ...(options.kind === 'sqlite' ? { file: options.file, raw, ...(reader ? { reader } : {}) } : {}),
    transaction: (fn) => db.transaction().execute(fn),
    async ping(timeoutMs = 2_000) {
      // Bounded: a database that stops answering (rather than refusing) is not ready, now.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), timeoutMs); });
      try {
        return await Promise.race([sql`select 1`.execute(db).then(() => true, () => false), late]);
      } finally { clearTimeout(timer); }
    },
    async close() {
      if (closed) return;
      closed = true;
      reader?.close();
      await db.destroy();
      await wal?.close();
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
