// SQLite through better-sqlite3: WAL, synchronous=FULL (a commit is on disk before it returns,
// which invariant 1 relies on), BEGIN IMMEDIATE so two processes never deadlock upgrading locks.
import BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver } from 'kysely';

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class GavelSqliteDialect extends SqliteDialect {
  readonly #config: ConstructorParameters<typeof SqliteDialect>[0];
  constructor(config: ConstructorParameters<typeof SqliteDialect>[0]) {
    super(config);
    this.#config = config;
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

export function openSqliteDatabase(file: string): BetterSqlite3.Database {
  const database = new BetterSqlite3(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  database.pragma('busy_timeout = 10000');
  database.pragma('foreign_keys = ON');
  return database;
}

/**
 * Kysely prepares every query afresh; preparing costs more than running most of ours. Queries are
 * parameterized, so the SQL text is a good cache key. Statements are used one at a time (Kysely
 * serializes the single connection), so sharing them is safe.
 */
function withStatementCache(database: BetterSqlite3.Database, max = 1000) {
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

export function createSqliteDialect(file: string): SqliteDialect {
  return new GavelSqliteDialect({ database: async () => withStatementCache(openSqliteDatabase(file)) as never });
}
