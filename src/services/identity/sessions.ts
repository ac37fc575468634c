// Console sessions: a 256-bit random token in an HttpOnly cookie; the database keeps only its
// SHA-256, so a copy of the database cannot be replayed as a login. Every instance sees the same
// rows, so logout and revocation end a session everywhere on the next request.
import { createHash, randomBytes } from 'node:crypto';
import { sessionVerdict, SESSION_LIFETIMES, type SessionLifetimes } from '../../domain/access/session-lifetime.ts';
import { newId } from '../../lib/ids.ts';
import { affected, type Db, type Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { installationProject } from '../bootstrap.ts';

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');
const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;
/** last_seen_at is refreshed at most this often, so reads do not each cost a write. */
const TOUCH_EVERY_MS = 30_000;

export interface NewSession { id: string; token: string; expires_at: string }

export async function createSession(trx: Tx, principalId: string, now: Date, lifetimes: SessionLifetimes = SESSION_LIFETIMES): Promise<NewSession> {
  const token = randomBytes(32).toString('base64url');
  const id = newId('ses', now.getTime());
  const at = now.toISOString();
  const expires_at = new Date(now.getTime() + lifetimes.absoluteMs).toISOString();
  await trx.insertInto('sessions').values({ id, token_hash: hashToken(token), principal_id: principalId, created_at: at, last_seen_at: at, expires_at, ended_at: null, ended_reason: null }).execute();
  return { id, token, expires_at };
}

export interface LiveSession { id: string; principal_id: string; expires_at: string; name: string }

/** The live session a cookie token names, refreshing its idle clock; undefined when none. */
export async function resolveSession(db: Db, token: string | undefined, now: Date, lifetimes: SessionLifetimes = SESSION_LIFETIMES): Promise<LiveSession | undefined> {
  if (!token || !TOKEN_RE.test(token)) return undefined;
  const row = await db.selectFrom('sessions as s').innerJoin('principals as p', 'p.id', 's.principal_id')
    .select(['s.id', 's.principal_id', 's.last_seen_at', 's.expires_at', 's.ended_at', 'p.disabled_at', 'p.name'])
    .where('s.token_hash', '=', hashToken(token)).executeTakeFirst();
  if (!row || row.disabled_at || sessionVerdict(row, now, lifetimes) !== 'active') return undefined;
  // Also when the last use lies ahead (the clock stepped back): the idle clock restarts at the present.
  if (Math.abs(now.getTime() - Date.parse(row.last_seen_at)) >= TOUCH_EVERY_MS) {
    await db.updateTable('sessions').set({ last_seen_at: now.toISOString() }).where('id', '=', row.id).where('ended_at', 'is', null).execute();
  }
  return { id: row.id, principal_id: row.principal_id, expires_at: row.expires_at, name: row.name };
}

/**
 * Ends the live session the token names, if any, and audits it (`session.ended` in each project of
 * its principal, with the reason: logout, or replaced by a new login on the same browser).
 */
export async function endSessionByToken(trx: Tx, token: string, reason: string, now: Date): Promise<string | undefined> {
  if (!TOKEN_RE.test(token)) return undefined;
  const row = await trx.selectFrom('sessions').select(['id', 'principal_id']).where('token_hash', '=', hashToken(token)).where('ended_at', 'is', null).executeTakeFirst();
  if (!row) return undefined;
  // Conditional: a logout on another instance, or a removal ending the person's sessions, may have
  // ended it since the read. Then it was ended once, by that, and audited there.
  const ended = await trx.updateTable('sessions').set({ ended_at: now.toISOString(), ended_reason: reason }).where('id', '=', row.id).where('ended_at', 'is', null).execute();
  if (affected(ended) === 0) return undefined;
  await recordSessionEvent(trx, 'session.ended', row.principal_id, { session_id: row.id, reason }, now);
  return row.id;
}

/** A session event, written in each project the person is a member of (audit events are per project). */
export async function recordSessionEvent(trx: Tx, kind: 'session.started' | 'session.ended', principalId: string, data: Record<string, unknown>, at: Date): Promise<void> {
  for (const projectId of await auditProjectsOf(trx, principalId)) {
    await recordAudit(trx, { projectId, kind, actor: principalId, data: { principal_id: principalId, ...data }, at });
  }
}

/** The projects whose audit logs take an event about a person: its own, or the installation's for a person of none (decision 0201). */
export async function auditProjectsOf(trx: Tx, principalId: string): Promise<string[]> {
  const memberships = await trx.selectFrom('memberships').select('project_id').where('principal_id', '=', principalId).where('revoked_at', 'is', null).execute();
  if (memberships.length > 0) return memberships.map((m) => m.project_id);
  return [await installationProject(trx)].filter((p): p is string => p !== undefined);
}

/** Ends every live session of a principal; returns how many. */
export async function endSessionsOf(trx: Tx, principalId: string, reason: string, now: Date): Promise<number> {
  // Counted by the update itself: a person signing in without its cookie keeps each session it left.
  return affected(await trx.updateTable('sessions').set({ ended_at: now.toISOString(), ended_reason: reason })
    .where('principal_id', '=', principalId).where('ended_at', 'is', null).execute());
}
