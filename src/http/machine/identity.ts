// Machine-plane identity routes: POST /v1/projects/{projectId}/principals, GET/PUT …/sod.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { normalizeName } from '../../domain/access/names.ts';
import type { Role } from '../../domain/access/roles.ts';
import { hashPassword } from '../../lib/passwords.ts';
import { createMemberPrincipal } from '../../services/identity/members.ts';
import { putSod, readSod } from '../../services/identity/sod.ts';
import { machineAuth } from '../auth/api-key.ts';
import { requirePerson } from '../auth/person.ts';
import { refuseBody } from '../errors.ts';
import { credentialErrors } from '../credential-errors.ts';
import { errorResponses, ProjectParams } from '../schemas/common.ts';
import { Member, Name, Password, RoleList, SodDocumentSchema } from '../console/schemas.ts';

const SodRecord = Type.Object({ document: SodDocumentSchema, updated_at: Type.Union([Type.String(), Type.Null()]), updated_by: Type.Union([Type.String(), Type.Null()]) });

export async function machineIdentityRoutes(app: FastifyInstance): Promise<void> {
  app.post('/v1/projects/:projectId/principals', {
    preValidation: machineAuth(['ADMIN']),
    // The name and password rules report beside the schema's errors (refuseBody), every one at once.
    attachValidation: true,
    schema: {
      operationId: 'createPrincipal',
      tags: ['identity'], summary: 'Creates a principal (a service, or a person with a password) that is a member from the start',
      security: [{ apiKey: [] }], params: ProjectParams,
      body: Type.Object({
        kind: Type.Union([Type.Literal('service'), Type.Literal('person')]), name: Name,
        password: Type.Optional(Password), roles: Type.Optional(RoleList),
      }, { additionalProperties: false }),
      description: 'A key carrying ADMIN. Only a person\'s key creates a person: a service principal\'s key gets 403 `person_required` for kind person, since it could otherwise make itself a person and sign in as one to make a statement reserved to people (decision 0403).',
      response: { 201: Member, ...errorResponses({ auth: 'apiKey', body: true }, { 403: ['person_required'], 409: ['name_taken', 'sod_conflict'] }) },
    },
  }, async (request, reply) => {
    refuseBody(request, (body, failed) => {
      const errors = credentialErrors(body, failed, body.kind === 'person');
      if (body.kind === 'person' && body.password === undefined) errors.push({ pointer: '/password', code: 'required', message: 'a person needs a password' });
      if (body.kind === 'service' && body.password !== undefined && !failed('/password')) errors.push({ pointer: '/password', code: 'not_allowed', message: 'a service principal signs in with API keys only' });
      return errors;
    });
    const body = request.body as { kind: 'service' | 'person'; name: string; password?: string; roles?: Role[] };
    const name = normalizeName(body.name);
    if (body.kind === 'person') await requirePerson(app.gavel.store.db, request.auth!.principalId, 'only a person creates a person: a service principal could otherwise make itself one and sign in as it');
    const passwordHash = body.kind === 'person' ? await hashPassword(body.password!) : null;
    const auth = request.auth!;
    const member = await createMemberPrincipal(app.gavel.store, { projectId: auth.projectId, kind: body.kind, name, passwordHash, roles: body.roles ?? [], actor: auth.actor }, app.gavel.clock.now());
    return reply.code(201).send(member);
  });

  app.get('/v1/projects/:projectId/sod', {
    preValidation: machineAuth(['ADMIN', 'AUDITOR', 'POLICY_AUTHOR']),
    schema: { operationId: 'getSod', tags: ['identity'], summary: 'The separation-of-duties document of the project', security: [{ apiKey: [] }], params: ProjectParams, response: { 200: SodRecord, ...errorResponses({ auth: 'apiKey' }) } },
  }, async (request) => readSod(app.gavel.store.db, request.auth!.projectId));

  app.put('/v1/projects/:projectId/sod', {
    preValidation: machineAuth(['ADMIN']),
    schema: {
      operationId: 'replaceSod',
      tags: ['identity'], summary: 'Replaces the separation-of-duties document (refused while a member holds a pair it forbids)',
      security: [{ apiKey: [] }], params: ProjectParams, body: SodDocumentSchema,
      response: { 200: SodRecord, ...errorResponses({ auth: 'apiKey', body: true }, { 409: ['sod_conflict'] }) },
    },
  }, async (request) => putSod(app.gavel.store, { projectId: request.auth!.projectId, document: request.body, actor: request.auth!.actor }, app.gavel.clock.now()));
}
