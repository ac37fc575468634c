// Freeze, release and state of agents on the machine plane (spec 4.2).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { machineAuth } from '../auth/api-key.ts';
import { errorResponses, ProjectParams } from '../schemas/common.ts';
import { AgentDid, AgentState, FREEZE_CONFLICT, FreezeBody, QUEUE_AHEAD_BUSY, ReleaseBody } from '../schemas/agents.ts';
import { freezeAgent, getAgentState, releaseAgent } from '../../services/agents/agents.ts';
import { lockAsHolderOf } from '../../services/identity/members.ts';

/** Who may release an agent: the roles its route checks, and reads again under the roles lock. */
const RELEASERS = ['ADMIN', 'PERMIT_ISSUER'] as const;

export async function machineAgentRoutes(app: FastifyInstance): Promise<void> {
  const tags = ['agents'];
  const security = [{ apiKey: [] }];
  app.get('/v1/projects/:projectId/agents/state', {
    schema: { operationId: 'getAgentState', tags, security, summary: 'Whether an agent is frozen, since when and by whom', params: ProjectParams,
      querystring: Type.Object({ agent: AgentDid }, { additionalProperties: false }), response: { 200: AgentState, ...errorResponses({ auth: 'apiKey' }) } },
    preValidation: machineAuth(),
  }, async (request) => {
    const { agent } = request.query as { agent: string };
    return getAgentState(app.gavel.store.db, request.auth!.projectId, agent);
  });

  app.post('/v1/projects/:projectId/agents/freeze', {
    schema: { operationId: 'freezeAgent', tags, security, summary: 'Stop an agent immediately: its next decision, even one in flight, is DENY agent_frozen', params: ProjectParams,
      body: FreezeBody, response: { 200: AgentState, ...errorResponses({ auth: 'apiKey', body: true }, { ...FREEZE_CONFLICT, ...QUEUE_AHEAD_BUSY }) } },
    preValidation: machineAuth(),
  }, async (request) => {
    const body = request.body as { agent: string; reason?: string };
    const a = request.auth!;
    return app.gavel.store.transaction((trx) => freezeAgent(trx, { projectId: a.projectId, did: body.agent, actor: a.actor, reason: body.reason ?? null, dialect: app.gavel.store.dialect, at: () => app.gavel.clock.now().toISOString() }));
  });

  app.post('/v1/projects/:projectId/agents/release', {
    schema: { operationId: 'releaseAgent', tags, security, summary: 'Let a frozen agent act again', params: ProjectParams, body: ReleaseBody, response: { 200: AgentState, ...errorResponses({ auth: 'apiKey', body: true }, { 409: ['agent_not_frozen'], ...QUEUE_AHEAD_BUSY }) } },
    preValidation: machineAuth([...RELEASERS]),
  }, async (request) => {
    const body = request.body as { agent: string; reason?: string };
    const a = request.auth!;
    return app.gavel.store.transaction(async (trx) => {
      // The key authorized again under the roles lock, as in the console (console/agents.ts).
      await lockAsHolderOf(trx, app.gavel.store, a.projectId, a.actor, RELEASERS);
      return releaseAgent(trx, { projectId: a.projectId, did: body.agent, actor: a.actor, reason: body.reason ?? null, dialect: app.gavel.store.dialect, at: () => app.gavel.clock.now().toISOString() });
    });
  });
}
