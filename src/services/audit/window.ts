// A window on audit events' created_at as a range of their ids. An event's id is minted from its
// created_at (record.ts, lib/ids.ts newStampedId): the id's millisecond is the stamp's or at most
// STAMPED_ID_LEAD_MS after it, on every instance and thread, whatever its clock. So the events
// stamped in [from, until) all have ids in [first id at `from`, first id at `until` + lead), a range
// the (project_id, id) index bounds: a count or a walk reads the window's events and the lead's,
// not every event the project ever had (audit_events keeps no index on created_at: decision 0603's
// fewer B-trees). Callers keep the created_at conditions too: the range holds the window, the
// conditions make it exact.
import { firstIdAt, LAST_ID_MS, STAMPED_ID_LEAD_MS } from '../../lib/ids.ts';
import type { Db } from '../../store/store.ts';

/** The ids of the events stamped in [from, until) (ms) lie in [lowest, below); a side is absent when it bounds nothing. */
export function auditIdRange(from: number | undefined, until: number | undefined): { lowest?: string; below?: string } {
  // A stamp before 1970 or past the 48 bits is minted at the nearer end of the ids' range, so a
  // side that reaches past an end bounds nothing (an event stamped before 1970 may take up to the
  // lead's millisecond: `until` must be after 1970).
  const lowest = from !== undefined && from > 0 && from <= LAST_ID_MS ? firstIdAt('aud', from) : undefined;
  const end = until === undefined || until <= 0 ? undefined : until + STAMPED_ID_LEAD_MS;
  const below = end !== undefined && end <= LAST_ID_MS ? firstIdAt('aud', end) : undefined;
  return { ...(lowest !== undefined ? { lowest } : {}), ...(below !== undefined ? { below } : {}) };
}

/** The project's audit events stamped at `since` or later (the console overview's last 24 hours). */
export async function countAuditEventsSince(db: Db, projectId: string, since: Date): Promise<number> {
  let q = db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId).where('created_at', '>=', since.toISOString());
  const { lowest } = auditIdRange(since.getTime(), undefined);
  if (lowest !== undefined) q = q.where('id', '>=', lowest);
  return Number((await q.executeTakeFirstOrThrow()).n);
}
