// The control plane's counts, each answered by the database as one aggregate: a project may hold
// more members, grants and keys than one statement may bind (SQLite 32,766 variables, PostgreSQL
// 65,535) or than are worth reading into memory to count.
import { activeSessionBounds } from '../../domain/access/session-lifetime.ts';
import { isRole, ROLES, type Role } from '../../domain/access/roles.ts';
import type { Db } from '../../store/store.ts';

export interface ControlPlaneCounts {
  members: number;
  role_holders: Record<Role, number>;
  api_keys: { live: number; revoked: number };
  live_sessions: number;
}

export async function controlPlaneCounts(db: Db, projectId: string, now: Date): Promise<ControlPlaneCounts> {
  const currentMembers = db.selectFrom('memberships').select('principal_id').where('project_id', '=', projectId).where('revoked_at', 'is', null);
  const members = await db.selectFrom('memberships').select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('project_id', '=', projectId).where('revoked_at', 'is', null).executeTakeFirstOrThrow();
  // A grant counts while its holder is a member.
  const grants = await db.selectFrom('role_grants').select(['role', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('project_id', '=', projectId).where('principal_id', 'in', currentMembers).groupBy('role').execute();
  const role_holders = Object.fromEntries(ROLES.map((r) => [r, 0])) as Record<Role, number>;
  for (const g of grants) if (isRole(g.role)) role_holders[g.role] = Number(g.n);
  const keys = await db.selectFrom('api_keys').select((eb) => [eb.fn.countAll<number | string>().as('all'), eb.fn.count<number | string>('revoked_at').as('revoked')])
    .where('project_id', '=', projectId).executeTakeFirstOrThrow();
  // Live as its cookie would find it (sessionVerdict 'active', by the same bounds). Times are
  // stored as toISOString text, which sorts as the instants do.
  const live = activeSessionBounds(now);
  const iso = (ms: number) => new Date(ms).toISOString();
  const sessions = await db.selectFrom('sessions').select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('ended_at', 'is', null).where('expires_at', '>', iso(live.expiresAfter))
    .where('last_seen_at', '>', iso(live.lastSeenAfter)).where('last_seen_at', '<', iso(live.lastSeenBefore))
    .where('principal_id', 'in', currentMembers).executeTakeFirstOrThrow();
  const revoked = Number(keys.revoked);
  return {
    members: Number(members.n), role_holders,
    api_keys: { live: Number(keys.all) - revoked, revoked },
    live_sessions: Number(sessions.n),
  };
}
