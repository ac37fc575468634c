// Permits of a project newest first, paged by (created_at, commitment): commitments are not time-ordered.
import type { Db } from '../../store/store.ts';

/**
 * Up to `limit` rows after the cursor key `before` (`created_at~commitment`). The key is compared as
 * one row value, which both engines seek to in the (project_id[, agent], created_at, commitment)
 * index (migration 0909); written as `created_at < ? or (created_at = ? and commitment < ?)`
 * PostgreSQL filtered every newer row instead, so a deep page cost its depth.
 */
export async function listPermitRows(db: Db, projectId: string, q: { agent?: string | undefined; before?: string | undefined; limit: number }) {
  let query = db.selectFrom('permits').selectAll().where('project_id', '=', projectId);
  if (q.agent) query = query.where('agent', '=', q.agent);
  if (q.before) {
    const [at = '', c = ''] = q.before.split('~');
    query = query.where((eb) => eb(eb.refTuple('created_at', 'commitment'), '<', eb.tuple(at, c)));
  }
  return query.orderBy('created_at', 'desc').orderBy('commitment', 'desc').limit(q.limit).execute();
}
