// Fixed SQL for the decision hot path. Building a query with Kysely's builder costs more than
// running it on SQLite; these statements never change shape, so they are written once, with `?`
// placeholders rewritten to `$n` for PostgreSQL, and run through Kysely's executor (same
// connection, same transaction).
import { CompiledQuery } from 'kysely';
import type { Db, Dialect, Tx } from './store.ts';

export interface FixedSql { sqlite: string; postgres: string }

export function fixedSql(text: string): FixedSql {
  let n = 0;
  return { sqlite: text, postgres: text.replace(/\?/g, () => `$${++n}`) };
}

export async function runFixed<R = unknown>(db: Db | Tx, dialect: Dialect, query: FixedSql, params: readonly unknown[]): Promise<R[]> {
  const result = await db.executeQuery<R>(CompiledQuery.raw(query[dialect], params as unknown[]));
  return result.rows;
}
