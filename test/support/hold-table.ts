// Holds a table (or one row) locked from a PostgreSQL session of its own, so that a service's statement on it
// waits there: a test can then cut or partition the service (tcp-proxy.ts) at that statement.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { TcpProxy } from './tcp-proxy.ts';

interface ReachedOptions { statements?: number; unless?: Promise<unknown> }

export interface HeldTable {
  /**
   * Resolves once `statements` (default 1) statements of the schema's service (`like`, a LIKE
   * pattern of their text) wait on a lock, any lock, or once `unless` settles; fails after 30 s.
   */
  reached(like: string, options?: ReachedOptions): Promise<void>;
  release(): Promise<void>;
}

/**
 * `mode` 'exclusive' still lets the service read the table: its writes alone wait, so a test can
 * stop a transaction between what it read and what it writes.
 */
export async function holdTable(url: string, schema: string, table: string, mode: 'access exclusive' | 'exclusive' = 'access exclusive'): Promise<HeldTable> {
  const client = await connect(url, schema);
  await client.query(`lock table ${table} in ${mode} mode`);
  const release = releaser(client);
  return { reached: (like, options) => reached(client, schema, table, like, release, options), release };
}

/**
 * Holds one row (`id`) locked FOR UPDATE: the service still reads it, and its writes to the row wait.
 * `commit` runs `sql` (the row's change that the waiting writer will then see) and commits.
 */
export async function holdRow(url: string, schema: string, table: string, id: string): Promise<HeldTable & { commit(sql: string, params: unknown[]): Promise<void> }> {
  return holdRowsWhere(url, schema, table, 'id = $1', [id]);
}

/** holdRow for the rows `where` selects (a condition with $n placeholders): a table keyed otherwise. */
export async function holdRowsWhere(url: string, schema: string, table: string, where: string, params: unknown[]): Promise<HeldTable & { commit(sql: string, params: unknown[]): Promise<void> }> {
  const client = await connect(url, schema);
  await client.query(`select 1 from ${table} where ${where} for update`, params);
  const release = releaser(client);
  return {
    reached: (like, options) => reached(client, schema, table, like, release, options),
    release,
    async commit(sql, params) { await client.query(sql, params); await client.query('commit'); await client.end(); },
  };
}

async function connect(url: string, schema: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  await client.query('begin');
  return client;
}

/** Rolls the holding transaction back and closes its session, once however often it is called. */
function releaser(client: pg.Client): () => Promise<void> {
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    await client.query('rollback').catch(() => {});
    await client.end();
  };
}

async function reached(client: pg.Client, schema: string, table: string, like: string, release: () => Promise<void>, { statements = 1, unless }: ReachedOptions = {}): Promise<void> {
  if (await untilWaiting(client, schema, like, { statements, unless })) return;
  await release();
  assert.fail(`no ${statements} statements like ${like} waited on ${table}`);
}

/**
 * How many statements (`like`, a LIKE pattern of their text) of the service of `schema` wait on a
 * lock now. Its own sessions only (named by the schema): another test file's, in the same database
 * or another, wait on locks of their own. Cleared first: inside a transaction PostgreSQL would
 * otherwise show the activity as first read there, statements that came since unseen.
 */
export async function waitingStatements(client: pg.Client, schema: string, like = '%'): Promise<number> {
  const { rows } = await client.query(`select pg_stat_clear_snapshot(), (select count(*)::int from pg_stat_activity
    where application_name = $1 and wait_event_type = 'Lock' and query like $2) as n`, [`gavel/${schema}`, like]);
  return rows[0].n;
}

/**
 * True once `statements` such statements wait, or once `unless` settles; false after 30 s, a bound
 * for a statement that will not come, not for a slow one (on a loaded machine a start alone has
 * taken over 30 s: process.ts).
 */
export async function untilWaiting(client: pg.Client, schema: string, like: string, { statements = 1, unless }: ReachedOptions = {}): Promise<boolean> {
  let settled = false;
  unless?.then(() => { settled = true; }, () => { settled = true; });
  for (const until = Date.now() + 30_000; Date.now() < until; await sleep(20)) {
    if (settled || await waitingStatements(client, schema, like) >= statements) return true;
  }
  return settled;
}

/**
 * Runs `send` on the service of `schema` until its statement `like` waits on `table`, cuts the
 * service's relay there (its connections reset mid-transaction), and returns its answer, the relay
 * restored.
 */
export async function cutAt<T>(relay: TcpProxy, schema: string, table: string, like: string, send: () => Promise<T>): Promise<T> {
  const held = await holdTable(process.env.GAVEL_TEST_DATABASE_URL!, schema, table);
  const pending = send();
  await held.reached(like);
  relay.cut();
  await held.release();
  try { return await pending; } finally { relay.restore(); }
}
