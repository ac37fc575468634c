// PostgreSQL through node-postgres. BIGINT (int8) comes back as a JS number: every stored integer
// is bounded by 2^53-1 at the edge (money, counters), so the conversion is exact.
import pg from 'pg';
import { PostgresDialect } from 'kysely';
import { preparedStatementName } from '../fixed-sql.ts';

pg.types.setTypeParser(20, (value: string) => Number(value));

export function createPostgresDialect(options: { url: string; schema?: string; poolSize?: number }): PostgresDialect {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    // A test run or a tenant can live in its own schema.
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  // Statements declared prepared (store/fixed-sql.ts) run by name: planned once per connection.
  // Kysely sends every query as (text, parameters); the text alone says which ones they are.
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (text: unknown, values?: unknown, ...rest: unknown[]) => {
      const name = typeof text === 'string' ? preparedStatementName(text) : undefined;
      return name ? query({ name, text, values }, ...rest) : query(text, values, ...rest);
    };
  });
  return new PostgresDialect({ pool });
}
