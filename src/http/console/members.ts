// Members and roles of a project (console, ADMIN to change; ADMIN or AUDITOR to read).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Role } from '../../domain/access/roles.ts';
import { addMember, grantRole, listMembers, listMemberships, revokeMember, revokeRole } from '../../services/identity/members.ts';
import { consoleAuth } from '../auth/session.ts';
import { invalidRequest } from '../problem.ts';
import { decodeKeyCursor, encodeKeyCursor } from '../paging.ts';
import { errorResponses, PageQuery, pageLimit, ProjectParams } from '../schemas/common.ts';
import { Member, Name, PrincipalId, RoleList, RoleSchema } from './schemas.ts';

const MemberParams = Type.Object({ projectId: ProjectParams.properties.projectId, principalId: PrincipalId }, { additionalProperties: false });
const RoleParams = Type.Object({ projectId: ProjectParams.properties.projectId, principalId: PrincipalId, role: RoleSchema }, { additionalProperties: false });
const NextCursor = Type.Union([Type.String(), Type.Null()], { description: 'cursor of the next page; null on the last' });
const Changed = Type.Object({ member: Member, changed: Type.Boolean({ description: 'false when the role was already in the requested state' }) });

export async function consoleMemberRoutes(app: FastifyInstance): Promise<void> {
  const now = () => app.gavel.clock.now();

  app.get('/v1/console/projects/:projectId/members', {
    preValidation: consoleAuth(['ADMIN', 'AUDITOR']),
    schema: { operationId: 'consoleListMembers', tags: ['console'], summary: 'Current members and their roles, newest membership first', params: ProjectParams, querystring: PageQuery, response: { 200: Type.Object({ members: Type.Array(Member), next_cursor: NextCursor }), ...errorResponses({ auth: 'session' }) } },
  }, async (request) => {
    const { limit: size, cursor } = request.query as { limit?: string; cursor?: string };
    const limit = pageLimit(size);
    const rows = await listMembers(app.gavel.store.db, request.auth!.projectId, { limit: limit + 1, before: decodeKeyCursor(cursor, 'members') });
    const members = rows.slice(0, limit);
    const last = members[members.length - 1];
    return { members, next_cursor: rows.length > limit && last ? encodeKeyCursor(`${last.member_since}~${last.principal_id}`, 'members') : null };
  });

  app.get('/v1/console/projects/:projectId/memberships', {
    preValidation: consoleAuth(['ADMIN', 'AUDITOR']),
    schema: {
      operationId: 'consoleListMemberships',
      tags: ['console'], summary: 'Membership records, current and ended, newest first', params: ProjectParams, querystring: PageQuery,
      response: {
        200: Type.Object({ memberships: Type.Array(Type.Object({
          principal_id: Type.String(), kind: Type.String(), name: Type.String(), created_at: Type.String(),
          created_by: Type.Union([Type.String(), Type.Null()]), revoked_at: Type.Union([Type.String(), Type.Null()]), active: Type.Boolean(),
        })), next_cursor: NextCursor }),
        ...errorResponses({ auth: 'session' }),
      },
    },
  }, async (request) => {
    const { limit: size, cursor } = request.query as { limit?: string; cursor?: string };
    const limit = pageLimit(size);
    const rows = await listMemberships(app.gavel.store.db, request.auth!.projectId, { limit: limit + 1, before: decodeKeyCursor(cursor, 'memberships') });
    const memberships = rows.slice(0, limit);
    const last = memberships[memberships.length - 1];
    return { memberships, next_cursor: rows.length > limit && last ? encodeKeyCursor(`${last.created_at}~${last.principal_id}`, 'memberships') : null };
  });

  app.post('/v1/console/projects/:projectId/members', {
    preValidation: consoleAuth(['ADMIN']),
    schema: {
      operationId: 'consoleAddMember',
      tags: ['console'], summary: 'Adds a registered principal (by principal_id or name) to the project with initial roles',
      params: ProjectParams,
      body: Type.Object({ principal_id: Type.Optional(PrincipalId), name: Type.Optional(Name), roles: Type.Optional(RoleList) }, { additionalProperties: false }),
      response: { 201: Member, ...errorResponses({ auth: 'session', body: true }, { 404: ['not_found'], 409: ['already_member', 'sod_conflict'], 422: ['principal_disabled'] }) },
    },
  }, async (request, reply) => {
    const body = request.body as { principal_id?: string; name?: string; roles?: Role[] };
    if ((body.principal_id === undefined) === (body.name === undefined)) {
      throw invalidRequest([{ pointer: '/principal_id', code: 'one_of_required', message: 'give exactly one of principal_id or name' }]);
    }
    const member = await addMember(app.gavel.store, { projectId: request.auth!.projectId, principalId: body.principal_id, name: body.name, roles: body.roles ?? [], actor: request.auth!.actor }, now());
    return reply.code(201).send(member);
  });

  app.post('/v1/console/projects/:projectId/members/:principalId/revoke', {
    preValidation: consoleAuth(['ADMIN']),
    schema: {
      operationId: 'consoleRemoveMember',
      tags: ['console'], summary: 'Ends a membership: roles removed, API keys revoked, sessions ended at once; the last ADMIN cannot be removed',
      params: MemberParams, body: Type.Object({}, { additionalProperties: false, description: 'Send {}' }),
      response: { 200: Type.Object({ principal_id: Type.String(), revoked_at: Type.String(), sessions_ended: Type.Integer(), keys_revoked: Type.Integer() }), ...errorResponses({ auth: 'session', body: true }, { 404: ['not_found'], 409: ['last_admin'], 422: ['not_a_member'] }) },
    },
  }, async (request) => {
    const { principalId } = request.params as { principalId: string };
    return revokeMember(app.gavel.store, { projectId: request.auth!.projectId, principalId, actor: request.auth!.actor }, now());
  });

  app.post('/v1/console/projects/:projectId/members/:principalId/roles', {
    preValidation: consoleAuth(['ADMIN']),
    schema: {
      operationId: 'consoleGrantRole',
      tags: ['console'], summary: 'Grants a role to a member (refused where the SoD document forbids the combination)',
      params: MemberParams, body: Type.Object({ role: RoleSchema }, { additionalProperties: false }),
      response: { 200: Changed, ...errorResponses({ auth: 'session', body: true }, { 404: ['not_found'], 409: ['sod_conflict'], 422: ['not_a_member'] }) },
    },
  }, async (request) => {
    const { principalId } = request.params as { principalId: string };
    const { role } = request.body as { role: Role };
    return grantRole(app.gavel.store, { projectId: request.auth!.projectId, principalId, role, actor: request.auth!.actor }, now());
  });

  app.post('/v1/console/projects/:projectId/members/:principalId/roles/:role/revoke', {
    preValidation: consoleAuth(['ADMIN']),
    schema: {
      operationId: 'consoleRevokeRole',
      tags: ['console'], summary: 'Revokes a role from a member (the last ADMIN cannot lose ADMIN)',
      params: RoleParams, body: Type.Object({}, { additionalProperties: false, description: 'Send {}' }),
      response: { 200: Changed, ...errorResponses({ auth: 'session', body: true }, { 404: ['not_found'], 409: ['last_admin'], 422: ['not_a_member'] }) },
    },
  }, async (request) => {
    const { principalId, role } = request.params as { principalId: string; role: Role };
    return revokeRole(app.gavel.store, { projectId: request.auth!.projectId, principalId, role, actor: request.auth!.actor }, now());
  });
}
