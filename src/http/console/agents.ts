// Agents in the console: register, list, inspect, freeze and release (spec 4.7).
// Freezing is an emergency stop, so every role that oversees agents may pull it.
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { consoleAuth } from '../auth/session.ts';
import { Problem, notFound } from '../problem.ts';
import { decodeKeyCursor, encodeKeyCursor } from '../paging.ts';
import { errorResponses, Nullable, oneLineText, PageQuery, pageLimit, ProjectParams, Timestamp } from '../schemas/common.ts';
import { AgentDid, AgentDidSegment, AgentState, FREEZE_CONFLICT, FreezeBody, QUEUE_AHEAD_BUSY, ReleaseBody } from '../schemas/agents.ts';
import { agentState, freezeAgent, releaseAgent, type AgentStateRow } from '../../services/agents/agents.ts';
import { listAgentRows } from '../../services/agents/list.ts';
import { recordAudit } from '../../services/audit/record.ts';
import { lockAsHolderOf } from '../../services/identity/members.ts';
import { didKeyIsUsable } from '../../domain/permit/index.ts';

const READERS = ['ADMIN', 'AUDITOR', 'APPROVER', 'POLICY_AUTHOR', 'PERMIT_ISSUER'] as const;
const MANAGERS = ['ADMIN', 'PERMIT_ISSUER'] as const;
const STOPPERS = ['ADMIN', 'PERMIT_ISSUER', 'APPROVER'] as const;

const AgentView = Type.Object({
  did: AgentDid,
  name: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  created_by: Type.String({ description: 'Who first named the agent: the registering person, the permit issuer, the freezer, or the API key of its first decision' }),
  registered_at: Nullable(Timestamp, { description: 'When a person registered the agent; null for an agent only seen through a permit, a freeze or a decision' }),
  registered_by: Type.Union([Type.String(), Type.Null()]),
  ...AgentState.properties,
});
type Row = AgentStateRow & { did: string; name: string | null; created_at: string; created_by: string; registered_at: string | null; registered_by: string | null };
const toView = (r: Row) => ({ did: r.did, name: r.name, created_at: r.created_at, created_by: r.created_by, registered_at: r.registered_at, registered_by: r.registered_by, ...agentState(r.did, r) });

const CreateAgentBody = Type.Object({ did: AgentDid, name: Type.Optional(oneLineText(200, 'A name for the agent, shown in lists')) }, { additionalProperties: false });

export async function consoleAgentRoutes(app: FastifyInstance): Promise<void> {
  const tags = ['agents'];
  const P = '/v1/console/projects/:projectId/agents';

  app.post(P, {
    schema: { operationId: 'consoleRegisterAgent', tags, summary: 'Register an agent by its DID', params: ProjectParams, body: CreateAgentBody, response: { 201: AgentView, ...errorResponses({ auth: 'session', body: true }, { 409: ['agent_exists'] }) } },
    preValidation: consoleAuth([...MANAGERS]),
  }, async (request, reply) => {
    const body = request.body as Static<typeof CreateAgentBody>;
    if (!didKeyIsUsable(body.did)) throw new Problem(400, 'invalid_request', 'the agent is not valid; see errors', { errors: [{ pointer: '/did', code: 'invalid_did_key', message: 'a did:key must name a usable Ed25519 public key (not a point of small order)' }] });
    const a = request.auth!;
    const at = app.gavel.clock.now().toISOString();
    const row = await app.gavel.store.transaction(async (trx) => {
      // An agent first seen through a permit, a freeze or a decision has a row but no registration:
      // registering it now keeps its history and records who registered it.
      const inserted = await trx.insertInto('agents').values({
        project_id: a.projectId, did: body.did, name: body.name ?? null, created_at: at, created_by: a.actor, frozen_at: null, frozen_by: null, frozen_reason: null, released_at: null, released_by: null,
        registered_at: at, registered_by: a.actor,
      }).onConflict((oc) => oc.columns(['project_id', 'did']).doUpdateSet((eb) => ({
        registered_at: eb.ref('excluded.registered_at'), registered_by: eb.ref('excluded.registered_by'), name: eb.fn.coalesce(eb.ref('excluded.name'), eb.ref('agents.name')),
      })).where('agents.registered_at', 'is', null)).returningAll().executeTakeFirst();
      if (!inserted) throw new Problem(409, 'agent_exists', 'this agent is already registered in the project');
      await recordAudit(trx, { projectId: a.projectId, kind: 'agent.registered', actor: a.actor, data: { agent: body.did, name: body.name ?? null } });
      return inserted;
    });
    return reply.code(201).send(toView(row));
  });

  app.get(P, {
    schema: { operationId: 'consoleListAgents', tags, summary: 'Agents of the project, newest first', params: ProjectParams, querystring: PageQuery,
      response: { 200: Type.Object({ agents: Type.Array(AgentView), next_cursor: Type.Union([Type.String(), Type.Null()]) }), ...errorResponses({ auth: 'session' }) } },
    preValidation: consoleAuth([...READERS]),
  }, async (request) => {
    const q = request.query as { cursor?: string; limit?: string };
    const limit = pageLimit(q.limit);
    const before = decodeKeyCursor(q.cursor, 'agents');
    const rows = await listAgentRows(app.gavel.store.db, app.gavel.store.dialect, request.auth!.projectId, { before, limit: limit + 1 });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { agents: items.map(toView), next_cursor: rows.length > limit && last ? encodeKeyCursor(`${last.created_at}~${last.did}`, 'agents') : null };
  });

  app.get(`${P}/:agentDid`, {
    schema: { operationId: 'consoleGetAgent', tags, summary: 'One agent and its state', params: Type.Object({ projectId: ProjectParams.properties.projectId, agentDid: AgentDidSegment }, { additionalProperties: false }),
      response: { 200: AgentView, ...errorResponses({ auth: 'session' }, { 404: ['not_found'] }) } },
    preValidation: consoleAuth([...READERS]),
  }, async (request) => {
    const { agentDid } = request.params as { agentDid: string };
    const row = await app.gavel.store.db.selectFrom('agents').selectAll().where('project_id', '=', request.auth!.projectId).where('did', '=', agentDid).executeTakeFirst();
    if (!row) throw notFound('no such agent in the project');
    return toView(row);
  });

  app.post(`${P}/freeze`, {
    schema: { operationId: 'consoleFreezeAgent', tags, summary: 'Stop an agent immediately', params: ProjectParams, body: FreezeBody, response: { 200: AgentState, ...errorResponses({ auth: 'session', body: true }, { ...FREEZE_CONFLICT, ...QUEUE_AHEAD_BUSY }) } },
    preValidation: consoleAuth([...STOPPERS]),
  }, async (request) => {
    const body = request.body as Static<typeof FreezeBody>;
    const a = request.auth!;
    return app.gavel.store.transaction((trx) => freezeAgent(trx, { projectId: a.projectId, did: body.agent, actor: a.actor, reason: body.reason ?? null, dialect: app.gavel.store.dialect, at: () => app.gavel.clock.now().toISOString() }));
  });

  app.post(`${P}/release`, {
    schema: { operationId: 'consoleReleaseAgent', tags, summary: 'Let a frozen agent act again', params: ProjectParams, body: ReleaseBody, response: { 200: AgentState, ...errorResponses({ auth: 'session', body: true }, { 409: ['agent_not_frozen'], ...QUEUE_AHEAD_BUSY }) } },
    preValidation: consoleAuth([...MANAGERS]),
  }, async (request) => {
    const body = request.body as Static<typeof ReleaseBody>;
    const a = request.auth!;
    return app.gavel.store.transaction(async (trx) => {
      // Under the roles lock, the role read again (before the agents table lock: nothing takes them the other way round).
      await lockAsHolderOf(trx, app.gavel.store, a.projectId, a.actor, MANAGERS);
      return releaseAgent(trx, { projectId: a.projectId, did: body.agent, actor: a.actor, reason: body.reason ?? null, dialect: app.gavel.store.dialect, at: () => app.gavel.clock.now().toISOString() });
    });
  });
}
