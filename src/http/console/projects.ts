// GET /v1/console/projects and the per-project read views of the identity layer:
// me, settings, control-plane, dashboard.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { SESSION_LIFETIMES } from '../../domain/access/session-lifetime.ts';
import { ACCOUNT_LIMITS, ADDRESS_LIMITS, DEVICE_LIMITS, REGISTRATION_LIMITS } from '../../domain/access/throttle.ts';
import { DEVICE_COOKIE_LIFETIME_MS } from '../../services/identity/device-cookie.ts';
import { isRole, ROLES } from '../../domain/access/roles.ts';
import { rolesOf } from '../../services/identity/members.ts';
import { readSod } from '../../services/identity/sod.ts';
import { controlPlaneCounts } from '../../services/identity/control-plane.ts';
import { dashboardSections } from '../../services/dashboard/sections.ts';
import { countAuditEventsSince } from '../../services/audit/window.ts';
import { consoleAuth, cookieNames, CSRF_HEADER, servedOverTls } from '../auth/session.ts';
import { notFound } from '../problem.ts';
import { errorResponses, Nullable, ProjectParams } from '../schemas/common.ts';
import { RoleList, SodDocumentSchema } from './schemas.ts';

const Project = Type.Object({ id: Type.String(), name: Type.String(), created_at: Type.String(), roles: RoleList });
const NullableInt = Nullable(Type.Integer());
const NullableText = Nullable(Type.String());

export async function consoleProjectRoutes(app: FastifyInstance): Promise<void> {
  const db = () => app.gavel.store.db;

  async function project(projectId: string) {
    const p = await db().selectFrom('projects').selectAll().where('id', '=', projectId).executeTakeFirst();
    if (!p) throw notFound(`no project ${projectId}`);
    return p;
  }

  app.get('/v1/console/projects', {
    preValidation: consoleAuth(),
    schema: { operationId: 'consoleListProjects', tags: ['console'], summary: 'Projects the signed-in person belongs to, with their roles in each', response: { 200: Type.Object({ projects: Type.Array(Project) }), ...errorResponses({ auth: 'session', project: false }) } },
  }, async (request) => {
    const me = request.auth!.principalId;
    const rows = await db().selectFrom('memberships as m').innerJoin('projects as p', 'p.id', 'm.project_id')
      .select(['p.id', 'p.name', 'p.created_at']).where('m.principal_id', '=', me).where('m.revoked_at', 'is', null).orderBy('p.id', 'desc').execute();
    const grants = await db().selectFrom('role_grants').select(['project_id', 'role']).where('principal_id', '=', me).execute();
    return { projects: rows.map((r) => ({ ...r, roles: grants.filter((g) => g.project_id === r.id).map((g) => g.role).filter(isRole).sort() })) };
  });

  app.get('/v1/console/projects/:projectId/me', {
    preValidation: consoleAuth(),
    schema: {
      operationId: 'consoleGetMe',
      tags: ['console'], summary: 'The signed-in person, their current roles in this project, and their session', params: ProjectParams,
      response: { 200: Type.Object({ principal_id: Type.String(), name: Type.String(), kind: Type.String(), project_id: Type.String(), roles: RoleList, session: Type.Object({
        id: Type.String(),
        /** The absolute end, fixed at login. */
        expires_at: Type.String(),
        /** When the session ends if no request comes before (the idle lifetime), never after `expires_at`. */
        idle_expires_at: Type.String(),
      }) }), ...errorResponses({ auth: 'session' }) },
    },
  }, async (request) => {
    const auth = request.auth!;
    const p = await db().selectFrom('principals').select(['name', 'kind']).where('id', '=', auth.principalId).executeTakeFirstOrThrow();
    const s = await db().selectFrom('sessions').select(['id', 'expires_at', 'last_seen_at']).where('id', '=', auth.sessionId!).executeTakeFirstOrThrow();
    // The idle clock counts from the last refresh (at most every 30 s), so this is never later than the real end.
    const idleEnd = Math.min(Date.parse(s.last_seen_at) + SESSION_LIFETIMES.idleMs, Date.parse(s.expires_at));
    return { principal_id: auth.principalId, name: p.name, kind: p.kind, project_id: auth.projectId, roles: [...auth.roles].sort(),
      session: { id: s.id, expires_at: s.expires_at, idle_expires_at: new Date(idleEnd).toISOString() } };
  });

  app.get('/v1/console/projects/:projectId/settings', {
    preValidation: consoleAuth(['ADMIN', 'AUDITOR']),
    schema: {
      operationId: 'consoleGetSettings',
      tags: ['console'], summary: 'Project settings: identity, session lifetimes, cookies, throttling and the SoD document', params: ProjectParams,
      response: {
        200: Type.Object({
          project: Type.Object({ id: Type.String(), name: Type.String(), created_at: Type.String() }),
          sessions: Type.Object({ idle_timeout_seconds: Type.Integer(), absolute_timeout_seconds: Type.Integer(), session_cookie: Type.String(), csrf_cookie: Type.String(), csrf_header: Type.String(), device_cookie: Type.String(), device_cookie_max_age_seconds: Type.Integer(), secure_cookies: Type.Boolean() }),
          login_throttle: Type.Object({ account_failures_before_lock: Type.Integer(), device_failures_before_lock: Type.Integer(), address_failures_before_lock: Type.Integer(), window_seconds: Type.Integer(), max_lock_seconds: Type.Integer() }),
          registration_throttle: Type.Object({ registrations_per_address: Type.Integer(), window_seconds: Type.Integer(), max_lock_seconds: Type.Integer() }),
          sod: SodDocumentSchema,
          roles: RoleList,
        }),
        ...errorResponses({ auth: 'session' }),
      },
    },
  }, async (request) => {
    const p = await project(request.auth!.projectId);
    const names = cookieNames(app.gavel.config);
    return {
      project: p,
      sessions: {
        idle_timeout_seconds: SESSION_LIFETIMES.idleMs / 1000, absolute_timeout_seconds: SESSION_LIFETIMES.absoluteMs / 1000,
        session_cookie: names.session, csrf_cookie: names.csrf, csrf_header: CSRF_HEADER,
        device_cookie: names.device, device_cookie_max_age_seconds: DEVICE_COOKIE_LIFETIME_MS / 1000, secure_cookies: servedOverTls(app.gavel.config),
      },
      login_throttle: { account_failures_before_lock: ACCOUNT_LIMITS.lockAfter, device_failures_before_lock: DEVICE_LIMITS.lockAfter, address_failures_before_lock: ADDRESS_LIMITS.lockAfter, window_seconds: ACCOUNT_LIMITS.windowMs / 1000, max_lock_seconds: ACCOUNT_LIMITS.maxLockMs / 1000 },
      registration_throttle: { registrations_per_address: REGISTRATION_LIMITS.lockAfter, window_seconds: REGISTRATION_LIMITS.windowMs / 1000, max_lock_seconds: REGISTRATION_LIMITS.maxLockMs / 1000 },
      sod: (await readSod(db(), p.id)).document,
      roles: [...ROLES],
    };
  });

  app.get('/v1/console/projects/:projectId/control-plane', {
    preValidation: consoleAuth(['ADMIN', 'AUDITOR']),
    schema: {
      operationId: 'consoleGetControlPlane',
      tags: ['console'], summary: 'Who holds which role, how many keys are live, and the SoD document', params: ProjectParams,
      response: {
        200: Type.Object({
          project_id: Type.String(),
          members: Type.Integer(), role_holders: Type.Record(Type.String(), Type.Integer()),
          api_keys: Type.Object({ live: Type.Integer(), revoked: Type.Integer() }),
          live_sessions: Type.Integer(),
          sod: SodDocumentSchema, sod_updated_at: Type.Union([Type.String(), Type.Null()]), sod_updated_by: Type.Union([Type.String(), Type.Null()]),
        }),
        ...errorResponses({ auth: 'session' }),
      },
    },
  }, async (request) => {
    const projectId = request.auth!.projectId;
    const counts = await controlPlaneCounts(db(), projectId, app.gavel.clock.now());
    const sod = await readSod(db(), projectId);
    return { project_id: projectId, ...counts, sod: sod.document, sod_updated_at: sod.updated_at, sod_updated_by: sod.updated_by };
  });

  app.get('/v1/console/projects/:projectId/dashboard', {
    preValidation: consoleAuth(),
    schema: {
      operationId: 'consoleGetDashboard',
      tags: ['console'], summary: 'Overview for any member: the project, your roles, the active policy, what waits for a person (obligations, UNKNOWN executions), and whether the audit log is witnessed', params: ProjectParams,
      response: {
        200: Type.Object({
          project: Type.Object({ id: Type.String(), name: Type.String(), created_at: Type.String() }),
          your_roles: RoleList, members: Type.Integer(), live_api_keys: Type.Integer(),
          recent_audit_events: Type.Integer({ description: 'Audit events in the last 24 hours' }),
          policy: Type.Object({ active_version: NullableInt, activated_at: NullableText }, { description: 'The version that decides (null: none is active, every decision is DENY no_active_policy)' }),
          approvals: Type.Object({ pending: Type.Integer({ description: 'Obligations waiting for a person, not yet expired' }) }),
          executions: Type.Object({
            unknown: Type.Integer({ description: 'Executions whose outcome a person must resolve' }),
            in_flight: Type.Integer(),
          }),
          audit_log: Type.Object({
            tree_size: Type.Integer({ description: 'Events sequenced into the log (one log per installation)' }),
            latest_checkpoint: Nullable(Type.Object({ size: Type.Integer(), created_at: Type.String(), witnessed_at: NullableText })),
            witnessed_size: NullableInt,
            witness_problem: Type.Union([Type.Object({ kind: Type.String({ description: 'rolled_back (the log no longer extends a checkpoint it signed or the witness holds: a restore from an older copy, deleted rows, or a history replaced; found at start, every minute while idle, or on a submission; /readyz answers 503 while it lasts), refused (the witness will not cosign: an unknown origin, a bad signature), conflict (the witness holds another size the log reaches), invalid_cosignature or unavailable' }), reason: NullableText, at: Type.String() }), Type.Null()],
              { description: 'The witness\'s last refusal, when nothing was cosigned after it (a rollback: until a cosignature, or a check that finds the log and the witness agreeing again)' }),
          }),
        }),
        ...errorResponses({ auth: 'session' }),
      },
    },
  }, async (request) => {
    const auth = request.auth!;
    const p = await project(auth.projectId);
    const members = await db().selectFrom('memberships').select((eb) => eb.fn.countAll<number>().as('n')).where('project_id', '=', p.id).where('revoked_at', 'is', null).executeTakeFirstOrThrow();
    const keys = await db().selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')).where('project_id', '=', p.id).where('revoked_at', 'is', null).executeTakeFirstOrThrow();
    const recent = await countAuditEventsSince(db(), p.id, new Date(app.gavel.clock.now().getTime() - 86_400_000));
    return {
      project: p, your_roles: (await rolesOf(db(), p.id, auth.principalId)), members: Number(members.n), live_api_keys: Number(keys.n),
      recent_audit_events: recent,
      ...(await dashboardSections(db(), p.id, app.gavel.clock.now())),
    };
  });
}
