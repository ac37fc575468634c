// Holds a table locked from a PostgreSQL session of its own, so that a service's statement on it
// waits there: a test can then cut or partition the service (tcp-proxy.ts) at that statement.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { TcpProxy } from './tcp-proxy.ts';

export interface HeldTable {
  /**
   * Resolves once `statements` (default 1) statements of the schema's service (`like`, a LIKE
   * pattern of their text) wait on a lock, any lock, or once `unless` settles; fails after 5 s.
   */
  reached(like: string, options?: { statements?: number; unless?: Promise<unknown> }): Promise<void>;
  release(): Promise<void>;
}

/**
 * `mode` 'exclusive' still lets the service read the table: its writes alone wait, so a test can
 * stop a transaction between what it read and what it writes.
 */
export async function holdTable(url: string, schema: string, table: string, mode: 'access exclusive' | 'exclusive' = 'access exclusive'): Promise<HeldTable> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  await client.query('begin');
  await client.query(`lock table ${table} in ${mode} mode`);
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await client.query('rollback').catch(() => {});
    await client.end();
  };
  return {
    async reached(like, { statements = 1, unless } = {}) {
      let settled = false;
      unless?.then(() => { settled = true; }, () => { settled = true; });
      for (let i = 0; i < 250 && !settled; i++) {
        // A transaction reads one snapshot of the activity unless told to drop it.
        const { rows } = await client.query(`select pg_stat_clear_snapshot(), (select count(*)::int from pg_stat_activity
          where application_name = $1 and wait_event_type = 'Lock' and query like $2) as n`, [`gavel/${schema}`, like]);
        if (rows[0].n >= statements) return;
        await sleep(20);
      }
      if (settled) return;
      await release();
      assert.fail(`no ${statements} statements like ${like} waited on ${table}`);
    },
    release,
  };
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
