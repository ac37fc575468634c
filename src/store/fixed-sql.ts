// Fixed SQL for hot paths. Building a query with Kysely's builder costs more than running it on
// SQLite; these statements never change shape, so they are written once, with `?` placeholders
// rewritten to `$n` for PostgreSQL. On SQLite they run straight on the store's connection (the one
// Kysely's transaction holds, so they run inside it); on PostgreSQL through Kysely's executor
// (same connection, same transaction).
import { createHash } from 'node:crypto';
import { CompiledQuery, sql, type RawBuilder } from 'kysely';
import type { Db, Dialect, Tx } from './store.ts';
import { retryWhileBusy, type StatementSource } from './sqlite/dialect.ts';

export interface FixedSql { sqlite: string; postgres: string }

/** PostgreSQL texts to run as named prepared statements, by text (postgres/dialect.ts). */
const preparedOnPostgres = new Map<string, string>();

/**
 * `prepared`: on PostgreSQL, run as a named prepared statement, so each pooled connection plans it
 * once. For statements whose planning costs more than their execution (joins, subqueries); simple
 * ones gain nothing measurable (docs/performance.md).
 */
export function fixedSql(text: string, options: { prepared?: boolean } = {}): FixedSql {
  let n = 0;
  const query = { sqlite: text, postgres: text.replace(/\?/g, () => `$${++n}`) };
  if (options.prepared) preparedOnPostgres.set(query.postgres, `gavel_${createHash('sha256').update(query.postgres).digest('hex').slice(0, 16)}`);
  return query;
}

/**
 * A read that locks the rows it reads FOR SHARE on PostgreSQL. SQLite has no row locks and needs
 * none: its writer already holds the database's write lock.
 */
export function fixedSqlForShare(text: string): FixedSql {
  return { sqlite: fixedSql(text).sqlite, postgres: fixedSql(`${text} for share`).postgres };
}

/** The statement name a PostgreSQL text runs under, if it was declared prepared. */
export function preparedStatementName(text: string): string | undefined {
  return preparedOnPostgres.get(text);
}

export async function runFixed<R = unknown>(db: Db | Tx, dialect: Dialect, query: FixedSql, params: readonly unknown[]): Promise<R[]> {
  const result = await db.executeQuery<R>(CompiledQuery.raw(query[dialect], params as unknown[]));
  return result.rows;
}

/** Where fixed statements run: the engine, and on SQLite the connection itself. */
export interface SqlTarget { dialect: Dialect; raw?: StatementSource | undefined }

/**
 * The same statement as a Kysely `sql` template, for a caller that knows no SqlTarget: Kysely then
 * writes the engine's placeholders itself (at the builder's cost, off the hot path).
 */
function asTemplate<R>(query: FixedSql, params: readonly unknown[]): RawBuilder<R> {
  const parts = query.sqlite.split('?');
  return sql<R>(Object.assign([...parts], { raw: parts }) as unknown as TemplateStringsArray, ...params);
}

/** Rows of a fixed query (SQLite with a target: synchronously on the shared connection). */
export async function queryFixed<R = unknown>(trx: Db | Tx, target: SqlTarget | undefined, query: FixedSql, params: readonly unknown[]): Promise<R[]> {
  if (!target) return (await asTemplate<R>(query, params).execute(trx)).rows;
  if (target.raw) return target.raw.prepare(query.sqlite).all(params as unknown[]) as R[];
  return runFixed<R>(trx, target.dialect, query, params);
}

/** Runs a fixed statement; returns the rows it changed. */
export async function execFixed(trx: Db | Tx, target: SqlTarget | undefined, query: FixedSql, params: readonly unknown[]): Promise<number> {
  if (target?.raw) return target.raw.prepare(query.sqlite).run(params as unknown[]).changes;
  const result = target
    ? await trx.executeQuery(CompiledQuery.raw(query[target.dialect], params as unknown[]))
    : await asTemplate(query, params).execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * One read outside any transaction: on SQLite on the store's reader connection (a statement
 * refused with SQLITE_BUSY, which WAL readers meet only in rare moments, is retried on a timer);
 * on PostgreSQL through the pool.
 */
export async function readFixed<R = unknown>(store: { db: Db; dialect: Dialect; reader?: StatementSource | undefined }, query: FixedSql, params: readonly unknown[]): Promise<R[]> {
  const reader = store.reader;
  if (!reader) return runFixed<R>(store.db, store.dialect, query, params);
  return retryWhileBusy(() => reader.prepare(query.sqlite).all(params as unknown[]) as R[], 1_000);
}
