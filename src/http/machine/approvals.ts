// Approvals on the machine plane (spec 4.2; docs/approvals.md). Any key of the project may call
// them: reading shows what awaits a person; recording needs no role because the signature is the
// credential (a live approval key of a current APPROVER), though why a key cannot approve is told only
// to a caller that may read approval keys; withdrawing only takes authority away.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { machineAuth } from '../auth/api-key.ts';
import { decodeCursor, page } from '../paging.ts';
import { errorResponses, pageLimit, ProjectParams } from '../schemas/common.ts';
import { ObligationList, ObligationListQuery, ObligationView, RecordApprovalBody, RevokeApprovalBody } from '../schemas/approvals.ts';
import { listObligations, recordApproval, revokeApproval } from '../../services/approvals/approvals.ts';
import type { ApprovalStatus } from '../../domain/approval/index.ts';

export async function machineApprovalRoutes(app: FastifyInstance): Promise<void> {
  const tags = ['approvals'];
  const security = [{ apiKey: [] }];

  app.get('/v1/projects/:projectId/approvals', {
    schema: { operationId: 'listApprovals', tags, security, summary: 'Approval requests (obligations) and their status, newest first', params: ProjectParams,
      querystring: ObligationListQuery, response: { 200: ObligationList, ...errorResponses({ auth: 'apiKey' }) } },
    preValidation: machineAuth(),
  }, (request) => listObligationsPage(request));

  app.post('/v1/projects/:projectId/approvals', {
    schema: { operationId: 'recordApproval', tags, security, summary: 'Record an approval made elsewhere: an approval key\'s Ed25519 signature over the obligation\'s statement',
      description: 'Refusals come in this order: the body (400), the obligation (404), its state (409, which any key may read from the list), the key and its owner (422: why, to a key of ADMIN or AUDITOR or of the approval key\'s owner; any other key gets `approval_key_cannot_approve` whatever the reason), the signature (422 `signature_invalid`); decision 0502.',
      params: ProjectParams, body: RecordApprovalBody, response: { 201: ObligationView, ...errorResponses({ auth: 'apiKey', body: true }, {
        404: ['not_found'],
        409: ['already_approved', 'approval_consumed', 'approval_withdrawn', 'approval_request_expired'],
        422: ['approval_key_unknown', 'approval_key_retired', 'approver_not_eligible', 'self_approval', 'approval_key_cannot_approve', 'signature_invalid'],
      }) } },
    preValidation: machineAuth(),
  }, async (request, reply) => {
    const body = request.body as { approval_request_id: string; key_id: string; signature: string };
    const a = request.auth!;
    const view = await recordApproval(app.gavel.store, { projectId: a.projectId, approvalRequestId: body.approval_request_id, keyId: body.key_id, signature: body.signature, actor: a.actor,
      caller: { principalId: a.principalId, readsApprovalKeys: a.roles.has('ADMIN') || a.roles.has('AUDITOR') } }, app.gavel.clock.now());
    return reply.code(201).send(view);
  });

  app.post('/v1/projects/:projectId/approvals/revoke', {
    schema: { operationId: 'revokeApproval', tags, security, summary: 'Withdraw an approval that has not been consumed', params: ProjectParams,
      body: RevokeApprovalBody, response: { 200: ObligationView, ...errorResponses({ auth: 'apiKey', body: true }, {
        404: ['not_found'], 409: ['not_approved', 'approval_consumed', 'approval_withdrawn', 'approval_request_expired'],
      }) } },
    preValidation: machineAuth(),
  }, async (request) => {
    const body = request.body as { approval_request_id: string; reason?: string };
    const a = request.auth!;
    return revokeApproval(app.gavel.store, { projectId: a.projectId, approvalRequestId: body.approval_request_id, ...(body.reason ? { reason: body.reason } : {}), actor: a.actor }, app.gavel.clock.now());
  });
}

/** The obligations page both planes serve (`GET …/approvals`), newest first. */
export async function listObligationsPage(request: FastifyRequest): Promise<{ approvals: unknown[]; next_cursor: string | null }> {
  const { gavel } = request.server;
  const q = request.query as { cursor?: string; limit?: string; status?: ApprovalStatus; agent?: string };
  const limit = pageLimit(q.limit);
  const before = decodeCursor(q.cursor, 'apr');
  const rows = await listObligations(gavel.store.db, request.auth!.projectId, { limit: limit + 1, ...(before ? { before } : {}), ...(q.status ? { status: q.status } : {}), ...(q.agent ? { agent: q.agent } : {}) }, gavel.clock.now());
  const { items, next_cursor } = page(rows, limit);
  return { approvals: items, next_cursor };
}
