// Executions in the console (spec 4.7): list for those who oversee them, resolve for ADMIN.
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { consoleAuth } from '../auth/session.ts';
import { errorResponses, ProjectParams } from '../schemas/common.ts';
import { Problem } from '../problem.ts';
import { ConsoleResolveBody, ExecutionPageQuery, pageOf, ExecutionId, ExecutionList, Resolved } from '../schemas/executions.ts';
import { listExecutions } from '../../services/executions/list.ts';
import { resolveExecution } from '../../services/executions/resolve.ts';

const READERS = ['ADMIN', 'AUDITOR', 'APPROVER'] as const;

export async function consoleExecutionRoutes(app: FastifyInstance): Promise<void> {
  const tags = ['executions'];
  app.get('/v1/console/projects/:projectId/executions', {
    schema: { operationId: 'consoleListExecutions', tags, summary: 'Executions of the project, newest first', params: ProjectParams, querystring: ExecutionPageQuery,
      response: { 200: ExecutionList, ...errorResponses({ auth: 'session' }) } },
    preValidation: consoleAuth([...READERS]),
  }, async (request) => {
    const q = request.query as Static<typeof ExecutionPageQuery>;
    return listExecutions(app.gavel.store.db, request.auth!.projectId, pageOf(q));
  });

  app.post('/v1/console/projects/:projectId/executions/:executionId/resolve', {
    schema: { operationId: 'consoleResolveExecution', tags, summary: 'Settle an UNKNOWN execution with what was found out; the first resolution stands',
      params: Type.Object({ ...ProjectParams.properties, executionId: ExecutionId }), body: ConsoleResolveBody,
      response: { 200: Resolved, ...errorResponses({ auth: 'session', body: true }, { 404: ['not_found'], 409: ['execution_not_unknown', 'conflict'] }) } },
    preValidation: consoleAuth(['ADMIN']),
  }, async (request) => {
    const { executionId } = request.params as { executionId: string };
    const body = request.body as Static<typeof ConsoleResolveBody>;
    if (body.execution_id !== undefined && body.execution_id !== executionId) {
      throw new Problem(400, 'invalid_request', 'execution_id in the body names another execution than the path',
        { errors: [{ pointer: '/execution_id', code: 'mismatch', message: 'must equal the executionId of the path' }] });
    }
    const a = request.auth!;
    return resolveExecution(app.gavel.store, { projectId: a.projectId, executionId, outcome: body.outcome, note: body.note, actor: a.actor, at: app.gavel.clock.now() });
  });
}
