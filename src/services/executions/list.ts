// Executions of a project, newest first (ids sort by creation time), paged by cursor.
import type { Db } from '../../store/store.ts';
import { decodeCursor, page } from '../../http/paging.ts';

export interface ExecutionSummary { id: string; status: string; agent: string; operation: string; created_at: string }

export async function listExecutions(db: Db, projectId: string, q: { cursor?: string | undefined; limit: number; status?: string | undefined }): Promise<{ executions: ExecutionSummary[]; next_cursor: string | null }> {
  const before = decodeCursor(q.cursor, 'exe');
  let query = db.selectFrom('executions').select(['id', 'status', 'agent', 'operation', 'created_at'])
    .where('project_id', '=', projectId);
  if (before) query = query.where('id', '<', before);
  if (q.status !== undefined) query = query.where('status', '=', q.status);
  const rows = await query.orderBy('id', 'desc').limit(q.limit + 1).execute();
  const { items, next_cursor } = page(rows, q.limit);
  return { executions: items, next_cursor };
}
