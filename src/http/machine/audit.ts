// Machine-plane audit-log routes: inclusion proof of an event, consistency between two sizes,
// the log's identity and newest checkpoints, and browsing events.
import type { FastifyInstance } from 'fastify';
import { auditLogDeps } from '../../services/auditlog/deps.ts';
import { cosignedNote, latestCheckpoint } from '../../services/auditlog/checkpointer.ts';
import { ensureLogState, logIdentity } from '../../services/auditlog/log.ts';
import { consistencyBetween, listAuditEvents, proofFor } from '../../services/auditlog/proofs.ts';
import { machineAuth } from '../auth/api-key.ts';
import { decodeCursor, page } from '../paging.ts';
import { errorResponses, PageQuery, pageLimit, ProjectParams } from '../schemas/common.ts';
import { AuditPage, AuditParams, AuditProofSchema, ConsistencyQuery, ConsistencySchema, LogInfoSchema, PROOF_NOT_READY } from '../schemas/audit.ts';

export async function machineAuditRoutes(app: FastifyInstance): Promise<void> {
  app.get('/v1/projects/:projectId/audit/:auditId/proof', {
    preValidation: machineAuth([]),
    schema: {
      operationId: 'getAuditProof',
      tags: ['audit'], summary: 'Inclusion proof of an audit event against the newest witnessed checkpoint (409 proof_not_ready with Retry-After until one covers it)',
      security: [{ apiKey: [] }], params: AuditParams, response: { 200: AuditProofSchema, ...errorResponses({ auth: 'apiKey' }, { 404: ['not_found'], 409: PROOF_NOT_READY, 500: ['log_damaged'] }) },
    },
  }, async (request) => {
    const { auditId } = request.params as { auditId: string };
    return proofFor(auditLogDeps(app.gavel), request.auth!.projectId, auditId);
  });

  app.get('/v1/projects/:projectId/audit/consistency', {
    preValidation: machineAuth([]),
    schema: {
      operationId: 'getAuditConsistency',
      tags: ['audit'], summary: 'RFC 9162 consistency proof between two tree sizes (normally two checkpoints)',
      security: [{ apiKey: [] }], params: ProjectParams, querystring: ConsistencyQuery, response: { 200: ConsistencySchema, ...errorResponses({ auth: 'apiKey' }, { 500: ['log_damaged'] }) },
    },
  }, async (request) => {
    const q = request.query as { from: string; to: string };
    return consistencyBetween(auditLogDeps(app.gavel), Number(q.from), Number(q.to));
  });

  app.get('/v1/projects/:projectId/audit/log', {
    preValidation: machineAuth([]),
    schema: {
      operationId: 'getAuditLog',
      tags: ['audit'], summary: "The log's origin, verifier keys and newest checkpoints",
      security: [{ apiKey: [] }], params: ProjectParams, response: { 200: LogInfoSchema, ...errorResponses({ auth: 'apiKey' }, { 500: ['log_damaged'] }) },
    },
  }, async () => {
    const { store, signer, config } = app.gavel;
    const [id, state, newest, witnessed] = await Promise.all([
      logIdentity(store, signer), ensureLogState(store), latestCheckpoint(store.db), latestCheckpoint(store.db, { witnessed: true }),
    ]);
    return {
      origin: id.origin, log_vkey: id.vkey, witness_vkey: config.witnessVkey ?? null, size: state.size,
      checkpoint: newest ? cosignedNote(newest) : null, witnessed_checkpoint: witnessed ? cosignedNote(witnessed) : null,
    };
  });

  app.get('/v1/projects/:projectId/audit', {
    preValidation: machineAuth(['ADMIN', 'AUDITOR']),
    schema: {
      operationId: 'listAuditEvents',
      tags: ['audit'], summary: 'Audit events of the project, newest first by id; following next_cursor to the end lists every event committed before the first page',
      security: [{ apiKey: [] }], params: ProjectParams, querystring: PageQuery, response: { 200: AuditPage, ...errorResponses({ auth: 'apiKey' }, { 500: ['log_damaged'] }) },
    },
  }, async (request) => {
    const q = request.query as { cursor?: string; limit?: string };
    const limit = pageLimit(q.limit);
    return page(await listAuditEvents(app.gavel.store.db, request.auth!.projectId, decodeCursor(q.cursor, 'aud'), limit), limit);
  });
}

