// Agents of a project newest first, paged by (created_at, did): agents one decision adds share created_at.
import { sql } from 'kysely';
import type { Db, Dialect } from '../../store/store.ts';

/**
 * Up to `limit` rows after the cursor key `before` (`created_at~did`), read in the agents_newest
 * index (migration 0909) from the cursor on. The tie is in the DIDs' bytes on both engines
 * (SQLite's order), not in the PostgreSQL database's collation (en_US puts "to" before "tU"); the
 * key is one row value, which PostgreSQL seeks to, where an `or` of its parts made it filter every
 * newer row.
 */
export async function listAgentRows(db: Db, dialect: Dialect, projectId: string, q: { before?: string | undefined; limit: number }) {
  const did = dialect === 'postgres' ? sql<string>`did collate "C"` : sql<string>`did`;
  let query = db.selectFrom('agents').selectAll().where('project_id', '=', projectId);
  if (q.before) {
    const [at = '', after = ''] = q.before.split('~');
    query = query.where(sql<boolean>`(created_at, ${did}) < (${at}, ${after})`);
  }
  return query.orderBy('created_at', 'desc').orderBy(did, 'desc').limit(q.limit).execute();
}
