// API keys in the console: a member mints, lists and revokes its own, ADMIN any (secret shown once); ADMIN or AUDITOR lists all.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Role } from '../../domain/access/roles.ts';
import { listApiKeys, mintApiKey, revokeApiKey } from '../../services/identity/api-keys.ts';
import { consoleAuth } from '../auth/session.ts';
import { forbidden, Problem } from '../problem.ts';
import { sodConflict } from '../../domain/access/sod.ts';
import { getSod } from '../../services/identity/sod.ts';
import { rolesLock, rolesOf } from '../../services/identity/members.ts';
import { lockFor } from '../../store/store.ts';
import { decodeCursor, page } from '../paging.ts';
import { errorResponses, PageQuery, pageLimit, ProjectParams } from '../schemas/common.ts';
import { ApiKeyView, KeyId, Label, PrincipalId, RoleList } from './schemas.ts';

export async function consoleApiKeyRoutes(app: FastifyInstance): Promise<void> {
  app.get('/v1/console/projects/:projectId/api-keys', {
    // Any member: one that may mint and revoke its own keys must be able to see them (to find the
    // one that leaked). ADMIN and AUDITOR see every key of the project, any other member its own.
    preValidation: consoleAuth([]),
    schema: { operationId: 'consoleListApiKeys', tags: ['console'], summary: 'API keys of the project, newest first (never their secrets)', description: 'ADMIN and AUDITOR see every key of the project; any other member sees the keys bound to itself.', params: ProjectParams, querystring: PageQuery, response: { 200: Type.Object({ api_keys: Type.Array(ApiKeyView), next_cursor: Type.Union([Type.String(), Type.Null()]) }), ...errorResponses({ auth: 'session' }) } },
  }, async (request) => {
    const { limit: size, cursor } = request.query as { limit?: string; cursor?: string };
    const limit = pageLimit(size);
    const auth = request.auth!;
    const all = auth.roles.has('ADMIN') || auth.roles.has('AUDITOR');
    const rows = await listApiKeys(app.gavel.store.db, auth.projectId, { limit: limit + 1, before: decodeCursor(cursor, 'key'), ...(all ? {} : { holder: auth.principalId }) });
    const { items, next_cursor } = page(rows, limit);
    return { api_keys: items, next_cursor };
  });

  app.post('/v1/console/projects/:projectId/api-keys', {
    // Any member may mint a key for itself (with roles it holds); only ADMIN may mint for another.
    preValidation: consoleAuth([]),
    schema: {
      operationId: 'consoleMintApiKey',
      tags: ['console'], summary: 'Mints an API key; the secret is in this response only and is never shown again',
      description: 'The key is bound to principal_id (default: the caller) and carries a subset of that principal\'s current roles; the roles are re-checked on every request. A member may mint a key for itself, carrying at least one role it holds (a key with no role is a platform credential only ADMIN mints); only ADMIN may mint one for another principal, and never one carrying a role that the project\'s separation of duties forbids alongside a role the minter holds (the minter would hold the secret): by default an ADMIN cannot mint a POLICY_AUTHOR key.',
      params: ProjectParams,
      body: Type.Object({ name: Label, roles: RoleList, principal_id: Type.Optional(PrincipalId) }, { additionalProperties: false }),
      response: { 201: Type.Object({ id: Type.String(), secret: Type.String(), name: Type.String(), principal_id: Type.String(), roles: RoleList, created_at: Type.String() }), ...errorResponses({ auth: 'session', body: true }, { 403: ['separation_of_duties'], 422: ['not_a_member', 'role_not_held', 'roles_required'] }) },
    },
  }, async (request, reply) => {
    const auth = request.auth!;
    const body = request.body as { name: string; roles: Role[]; principal_id?: string };
    const principalId = body.principal_id ?? auth.principalId;
    const at = app.gavel.clock.now();
    // The minter's roles are read under the lock every change of roles and memberships takes: a
    // member removed (or an ADMIN demoted) meanwhile must not leave behind a key minted for another,
    // whose secret it holds and which its removal would not have revoked.
    const key = await app.gavel.store.transaction(async (trx) => {
      await lockFor(trx, app.gavel.store.dialect, rolesLock(auth.projectId));
      const minter = new Set(await rolesOf(trx, auth.projectId, auth.principalId));
      if (principalId !== auth.principalId) {
        if (!minter.has('ADMIN')) throw forbidden('only ADMIN may mint an API key for another principal; you may mint one for yourself');
        // Whoever mints a key holds its secret: minting must not hand the minter a role SoD keeps apart from its own.
        const sod = await getSod(trx, auth.projectId);
        for (const role of body.roles) {
          const clash = sodConflict(sod, minter, role);
          if (clash) throw new Problem(403, 'separation_of_duties', `separation of duties keeps ${clash[0]} and ${clash[1]} apart and you hold one of them: whoever mints a key holds its secret, so a key carrying ${role} must be minted by its holder`);
        }
      }
      // Hygiene (decision 0403, addendum): a member without ADMIN mints keys for roles it holds, at
      // least one; keys meant only to decide, for an agent platform, are an ADMIN's to issue.
      if (!minter.has('ADMIN') && body.roles.length === 0) {
        throw new Problem(422, 'roles_required', 'without ADMIN you may mint a key only for roles you hold: name at least one (a key with no role is a platform credential an ADMIN issues)');
      }
      return mintApiKey(trx, { projectId: auth.projectId, principalId, name: body.name, roles: body.roles, actor: auth.actor, at });
    });
    reply.header('cache-control', 'no-store');
    return reply.code(201).send({ id: key.id, secret: key.secret, name: key.name, principal_id: principalId, roles: key.roles, created_at: key.created_at });
  });

  app.post('/v1/console/projects/:projectId/api-keys/:keyId/revoke', {
    // ADMIN revokes any key of the project; a member its own (any member may mint one, and a holder
    // whose key leaked must not have to find an ADMIN before it stops working).
    preValidation: consoleAuth([]),
    schema: {
      operationId: 'consoleRevokeApiKey',
      tags: ['console'], summary: 'Revokes an API key; the next request with it gets 401 on every instance',
      description: 'ADMIN may revoke any key of the project; any member may revoke a key bound to itself.',
      params: Type.Object({ projectId: ProjectParams.properties.projectId, keyId: KeyId }, { additionalProperties: false }),
      body: Type.Object({}, { additionalProperties: false, description: 'Send {}' }),
      response: { 200: Type.Object({ api_key: ApiKeyView, changed: Type.Boolean() }), ...errorResponses({ auth: 'session', body: true }, { 404: ['not_found'] }) },
    },
  }, async (request) => {
    const auth = request.auth!;
    const { keyId } = request.params as { keyId: string };
    const at = app.gavel.clock.now();
    const r = await app.gavel.store.transaction(async (trx) => {
      // Read under the roles lock, as minting does: an ADMIN demoted meanwhile revokes nothing of another's.
      await lockFor(trx, app.gavel.store.dialect, rolesLock(auth.projectId));
      const holder = await trx.selectFrom('api_keys').select('principal_id').where('project_id', '=', auth.projectId).where('id', '=', keyId).executeTakeFirst();
      if (holder && holder.principal_id !== auth.principalId && !(await rolesOf(trx, auth.projectId, auth.principalId)).includes('ADMIN')) {
        throw forbidden('only ADMIN may revoke another principal\'s API key; you may revoke your own');
      }
      return revokeApiKey(trx, { projectId: auth.projectId, keyId, actor: auth.actor, at });
    });
    return { api_key: r.key, changed: r.changed };
  });
}
