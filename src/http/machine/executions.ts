// Executions on the machine plane (spec 4.2): list, and resolve an UNKNOWN.
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { machineAuth } from '../auth/api-key.ts';
import { errorResponses, ProjectParams } from '../schemas/common.ts';
import { ExecutionList, ExecutionPageQuery, pageOf, MachineResolveBody, Resolved } from '../schemas/executions.ts';
import { listExecutions } from '../../services/executions/list.ts';
import { resolveExecution } from '../../services/executions/resolve.ts';

export async function machineExecutionRoutes(app: FastifyInstance): Promise<void> {
  const tags = ['executions'];
  const security = [{ apiKey: [] }];
  app.get('/v1/projects/:projectId/executions', {
    schema: { tags, security, summary: 'Executions of the project, newest first', params: ProjectParams, querystring: ExecutionPageQuery,
      response: { 200: ExecutionList, ...errorResponses() } },
    preValidation: machineAuth(),
  }, async (request) => {
    const q = request.query as Static<typeof ExecutionPageQuery>;
    return listExecutions(app.gavel.store.db, request.auth!.projectId, pageOf(q));
  });

  app.post('/v1/projects/:projectId/executions/resolve', {
    schema: { tags, security, summary: 'Settle an UNKNOWN execution with what was found out; the first resolution stands',
      params: ProjectParams, body: MachineResolveBody, response: { 200: Resolved, ...errorResponses() } },
    preValidation: machineAuth(),
  }, async (request) => {
    const body = request.body as Static<typeof MachineResolveBody>;
    const a = request.auth!;
    return resolveExecution(app.gavel.store, { projectId: a.projectId, executionId: body.execution_id, outcome: body.outcome, note: body.note, actor: a.actor, at: app.gavel.clock.now() });
  });
}
