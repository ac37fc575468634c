// Console audit-log routes: browse events, verify one event's proof (spec 2.11).
import type { FastifyInstance } from 'fastify';
import { auditLogDeps } from '../../services/auditlog/deps.ts';
import { listAuditEvents } from '../../services/auditlog/proofs.ts';
import { verifyProof } from '../../services/auditlog/verify.ts';
import { consoleAuth } from '../auth/session.ts';
import { decodeCursor, page } from '../paging.ts';
import { errorResponses, PageQuery, pageLimit, ProjectParams } from '../schemas/common.ts';
import { AuditPage, PROOF_NOT_READY, VerificationSchema, VerifyBody } from '../schemas/audit.ts';

export async function consoleAuditRoutes(app: FastifyInstance): Promise<void> {
  app.get('/v1/console/projects/:projectId/audit', {
    preValidation: consoleAuth(['ADMIN', 'AUDITOR']),
    schema: {
      operationId: 'consoleListAuditEvents',
      tags: ['console'], summary: 'Audit events of the project, newest first by id, with their leaf index; following next_cursor to the end lists every event committed before the first page',
      params: ProjectParams, querystring: PageQuery, response: { 200: AuditPage, ...errorResponses({ auth: 'session' }, { 500: ['log_damaged'] }) },
    },
  }, async (request) => {
    const q = request.query as { cursor?: string; limit?: string };
    const limit = pageLimit(q.limit);
    return page(await listAuditEvents(app.gavel.store.db, request.auth!.projectId, decodeCursor(q.cursor, 'aud'), limit), limit);
  });

  app.post('/v1/console/projects/:projectId/proofs/verify', {
    preValidation: consoleAuth(['ADMIN', 'AUDITOR']),
    schema: {
      operationId: 'consoleVerifyAuditEvent',
      tags: ['console'], summary: "Verifies an audit event: recomputes its leaf, checks the path against the checkpoint, consults the witness",
      params: ProjectParams, body: VerifyBody, response: { 200: VerificationSchema, ...errorResponses({ auth: 'session', body: true }, { 404: ['not_found'], 409: PROOF_NOT_READY, 500: ['log_damaged'] }) },
    },
  }, async (request) => {
    const { audit_event_id } = request.body as { audit_event_id: string };
    return verifyProof(auditLogDeps(app.gavel), request.auth!.projectId, audit_event_id);
  });
}
