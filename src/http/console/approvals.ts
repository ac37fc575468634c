// Approvals and approval keys in the console (spec 4.3, 4.7; docs/approvals.md). The passkey
// ceremony (challenge/complete) comes later and produces approvals through the same model.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { consoleAuth } from '../auth/session.ts';
import { listObligationsPage } from '../machine/approvals.ts';
import { forbidden } from '../problem.ts';
import { errorResponses, PageQuery, pageLimit, ProjectParams } from '../schemas/common.ts';
import { decodeCursor, page } from '../paging.ts';
import {
  ApprovalKeyParams, ApprovalKeyView, ApprovalParams, ObligationList, ObligationListQuery, ObligationView, PrincipalParams, RegisterApprovalKeyBody,
} from '../schemas/approvals.ts';
import { getObligation } from '../../services/approvals/approvals.ts';
import { listApprovalKeys, registerApprovalKey, retireApprovalKey } from '../../services/approvals/keys.ts';
import type { Role } from '../../domain/access/roles.ts';

const VIEWERS: Role[] = ['ADMIN', 'AUDITOR', 'APPROVER'];

/** The caller holds one of `roles` or is `principalId` itself; else 403. */
function requireRoleOrSelf(request: FastifyRequest, roles: Role[], principalId: string, what: string): void {
  const a = request.auth!;
  if (a.principalId === principalId || roles.some((r) => a.roles.has(r))) return;
  throw forbidden(`${what} needs one of the roles ${roles.join(', ')}, or to be the principal itself`);
}

export async function consoleApprovalRoutes(app: FastifyInstance): Promise<void> {
  const tags = ['approvals'];
  const C = '/v1/console/projects/:projectId';

  app.get(`${C}/approvals`, {
    schema: { operationId: 'consoleListApprovals', tags, summary: 'Approval requests (obligations) and their status, newest first', params: ProjectParams,
      querystring: ObligationListQuery, response: { 200: ObligationList, ...errorResponses({ auth: 'session' }) } },
    preValidation: consoleAuth(VIEWERS),
  }, (request) => listObligationsPage(request));

  app.get(`${C}/approvals/:approvalId`, {
    schema: { operationId: 'consoleGetApproval', tags, summary: 'One approval request with its approval, by approval request id (apr_) or approval id (apv_)', params: ApprovalParams,
      response: { 200: ObligationView, ...errorResponses({ auth: 'session' }, { 404: ['not_found'] }) } },
    preValidation: consoleAuth(VIEWERS),
  }, async (request) => {
    const { approvalId } = request.params as { approvalId: string };
    return getObligation(app.gavel.store.db, request.auth!.projectId, approvalId, app.gavel.clock.now());
  });

  app.get(`${C}/principals/:principalId/approval-keys`, {
    schema: { operationId: 'consoleListApprovalKeys', tags, summary: 'Approval keys of a principal (ADMIN, AUDITOR, or the principal itself), newest first', params: PrincipalParams, querystring: PageQuery,
      response: { 200: Type.Object({ approval_keys: Type.Array(ApprovalKeyView), next_cursor: Type.Union([Type.String(), Type.Null()]) }), ...errorResponses({ auth: 'session' }, { 404: ['not_found'] }) } },
    preValidation: consoleAuth(),
  }, async (request) => {
    const { principalId } = request.params as { principalId: string };
    const q = request.query as { cursor?: string; limit?: string };
    requireRoleOrSelf(request, ['ADMIN', 'AUDITOR'], principalId, 'reading approval keys');
    const limit = pageLimit(q.limit);
    const rows = await listApprovalKeys(app.gavel.store.db, request.auth!.projectId, principalId, { limit: limit + 1, before: decodeCursor(q.cursor, 'apk') });
    const { items, next_cursor } = page(rows, limit);
    return { approval_keys: items, next_cursor };
  });

  app.post(`${C}/principals/:principalId/approval-keys`, {
    schema: { operationId: 'consoleRegisterApprovalKey', tags, summary: 'Register an Ed25519 approval key of one\'s own (the principal itself, holding APPROVER)', params: PrincipalParams,
      body: RegisterApprovalKeyBody, response: { 201: ApprovalKeyView, ...errorResponses({ auth: 'session', body: true }, { 409: ['approval_key_exists'], 422: ['not_a_member', 'not_an_approver'] }) } },
    preValidation: consoleAuth(),
  }, async (request, reply) => {
    const { principalId } = request.params as { principalId: string };
    // Whoever holds a key's private half approves in its owner's name, so a key is registered by its
    // owner alone: an ADMIN who could register one for an APPROVER could approve as that person
    // (decision 0502, addendum). Retiring a key stays open to ADMIN.
    if (request.auth!.principalId !== principalId) throw forbidden('an approval key is registered by its owner alone; no role registers one for someone else');
    const body = request.body as { public_key: unknown; name?: string };
    const key = await registerApprovalKey(app.gavel.store, {
      projectId: request.auth!.projectId, principalId, publicKey: body.public_key, ...(body.name ? { name: body.name } : {}), actor: request.auth!.actor,
    }, app.gavel.clock.now());
    return reply.code(201).send(key);
  });

  app.post(`${C}/approval-keys/:keyId/retire`, {
    schema: { operationId: 'consoleRetireApprovalKey', tags, summary: 'Retire an approval key (ADMIN or its owner); approvals it signed and not yet consumed stop counting', params: ApprovalKeyParams,
      body: Type.Object({}, { additionalProperties: false }), response: { 200: ApprovalKeyView, ...errorResponses({ auth: 'session', body: true }, { 404: ['not_found'], 409: ['approval_key_retired'] }) } },
    preValidation: consoleAuth(),
  }, async (request) => {
    const { keyId } = request.params as { keyId: string };
    const a = request.auth!;
    return retireApprovalKey(app.gavel.store, { projectId: a.projectId, keyId, actor: a.actor, heldAdmin: a.roles.has('ADMIN') }, app.gavel.clock.now());
  });
}
