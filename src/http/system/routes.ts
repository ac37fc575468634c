// Liveness, readiness and the OpenAPI document.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { errorResponses } from '../schemas/common.ts';
import { Problem, retryLater } from '../problem.ts';
import { sendProblem } from '../errors.ts';

export async function systemRoutes(app: FastifyInstance): Promise<void> {
  let document: Buffer | undefined;
  app.get('/healthz', {
    schema: { operationId: 'getHealth', tags: ['system'], summary: 'Liveness: the process is up', response: { 200: Type.Object({ status: Type.Literal('ok') }), ...errorResponses({ auth: 'none' }) } },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    schema: { operationId: 'getReadiness', tags: ['system'], summary: 'Readiness: the database answers, and its disk is not full', response: { 200: Type.Object({ status: Type.Literal('ready') }), ...errorResponses({ auth: 'none' }, { 503: { what: 'Not ready: `not_ready` when the database does not answer or its disk is full (a write failed for want of space in the last 5 s, and none has committed since); `shutting_down` once the service has begun to stop: during its drain (GAVEL_SHUTDOWN_DRAIN_MS) every other request is still served and the connection kept, so that a load balancer stops sending new ones before the listener closes; after it, retry against another instance after `retry-after` (the connection is closed)', codes: ['not_ready'] } }) } },
  }, async (request, reply) => {
    const { store } = app.gavel;
    if (app.draining) return sendProblem(reply, request, retryLater(503, 'shutting_down', 'the service is stopping: it still answers requests for a moment; send new ones to another instance', 1));
    // Sent, not thrown: the full disk was logged once when writes began to fail, not at every probe.
    if (store.space.full()) return sendProblem(reply, request, new Problem(503, 'not_ready', 'the database\'s disk is full: writes fail for want of space'));
    if (!(await store.ping())) throw new Problem(503, 'not_ready', 'the database does not answer');
    return { status: 'ready' as const };
  });

  app.get('/openapi.json', {
    schema: { operationId: 'getOpenApi', tags: ['system'], summary: 'This OpenAPI 3.1 document', response: { 200: Type.Object({}, { additionalProperties: true }), ...errorResponses({ auth: 'none' }) } },
  }, async (_request, reply) => {
    // Serialized once, when first asked for (every route is registered by then): about 290 KB, and
    // for anyone to ask for, so the answers to many requests must not each hold a copy of their own.
    document ??= Buffer.from(JSON.stringify(app.swagger()));
    return reply.type('application/json; charset=utf-8').send(document);
  });
}
