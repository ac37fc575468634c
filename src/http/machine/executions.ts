// Executions on the machine plane (spec 4.2): list, and resolve an UNKNOWN.
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { machineAuth } from '../auth/api-key.ts';
import { errorResponses, ProjectParams } from '../schemas/common.ts';
import { ExecutionList, ExecutionPageQuery, pageOf, MachineResolveBody, Resolved } from '../schemas/executions.ts';
import { listExecutions } from '../../services/executions/list.ts';
import { resolveExecution } from '../../services/executions/resolve.ts';
import { requirePerson } from '../auth/person.ts';

export async function machineExecutionRoutes(app: FastifyInstance): Promise<void> {
  const tags = ['executions'];
  const security = [{ apiKey: [] }];
  app.get('/v1/projects/:projectId/executions', {
    schema: { operationId: 'listExecutions', tags, security, summary: 'Executions of the project, newest first', params: ProjectParams, querystring: ExecutionPageQuery,
      response: { 200: ExecutionList, ...errorResponses({ auth: 'apiKey' }) } },
    preValidation: machineAuth(),
  }, async (request) => {
    const q = request.query as Static<typeof ExecutionPageQuery>;
    return listExecutions(app.gavel.store.db, request.auth!.projectId, pageOf(q));
  });

  app.post('/v1/projects/:projectId/executions/resolve', {
    schema: { operationId: 'resolveExecution', tags, security, summary: 'Settle an UNKNOWN execution with what was found out; the first resolution stands',
      description: 'A key carrying ADMIN, as the console requires for the same statement (decision 0403), whose holder is a person (invariant 6: only a person resolves an UNKNOWN); a key without ADMIN gets 403 `forbidden`, a service principal\'s key 403 `person_required`.',
      params: ProjectParams, body: MachineResolveBody,
      response: { 200: Resolved, ...errorResponses({ auth: 'apiKey', body: true }, { 403: ['person_required'], 404: ['not_found'], 409: ['execution_not_unknown', 'conflict'] }) } },
    preValidation: machineAuth(['ADMIN']),
  }, async (request) => {
    const body = request.body as Static<typeof MachineResolveBody>;
    const a = request.auth!;
    // Invariant 6: a program may find out, but the statement that settles an UNKNOWN is a person's.
    await requirePerson(app.gavel.store.db, a.principalId, 'only a person resolves an UNKNOWN execution (resolve with a key of your own or in the console)');
    return resolveExecution(app.gavel.store, { projectId: a.projectId, executionId: body.execution_id, outcome: body.outcome, note: body.note, actor: a.actor, at: app.gavel.clock.now() });
  });
}
