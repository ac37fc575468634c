// Policy lifecycle over API keys: save, read, list, activate, simulate, replay
// (spec 2.8, 2.9, section 4; docs/policy-lifecycle.md).
import type { FastifyInstance, FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { POLICY_LIMITS } from '../../domain/policy/index.ts';
import type { Role } from '../../domain/access/roles.ts';
import { machineAuth } from '../auth/api-key.ts';
import { invalidRequest, Problem, type FieldError } from '../problem.ts';
import { invalidCursor } from '../paging.ts';
import { attachedErrors, refuseBody } from '../errors.ts';
import { policyErrors } from '../../services/policy/document.ts';
import { PageCursor, PageLimit, errorResponses, Money, multiLineText, ProjectParams, type RouteShape } from '../schemas/common.ts';
import type { AuthContext } from '../deps.ts';
import { activatePolicyVersion, refuseActivation } from '../../services/policy/activate.ts';
import { activeVersionJson, listVersions, readActiveVersion } from '../../services/policy/read.ts';
import { replayCandidateErrors, replayPolicy, REPLAY_MAX } from '../../services/policy/replay.ts';
import { savePolicyVersion } from '../../services/policy/save.ts';
import { agentRequired, simulatePolicy, simulationErrors } from '../../services/policy/simulate.ts';
import { parseJsonExactly } from '../../lib/json-parse.ts';

/** Documents may be large (up to 10,000 rules); the rest of the API keeps the global body limit. */
export const POLICY_BODY_LIMIT = POLICY_LIMITS.maxDocumentBytes;

const CLOSED = { additionalProperties: false };
const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 (hex) of the RFC 8785 canonical JSON of the document' });
const Time = Type.String({ format: 'date-time' });
const NullableTime = Type.Union([Time, Type.Null()]);
const State = Type.Union([Type.Literal('saved'), Type.Literal('active'), Type.Literal('retired')], {
  description: 'saved: never active; active: decides now; retired: was active, since replaced (may be activated again)',
});
const PolicyDocumentSchema = Type.Unknown({ description: 'A policy document (spec 2.7); validated by the policy engine, every error reported under /policy' });
/** The largest policy version: PostgreSQL's integer column holds no larger. */
const MAX_VERSION = 2_147_483_647;
const VersionNumber = Type.Integer({ minimum: 1, maximum: MAX_VERSION });

const VersionSummary = Type.Object({
  version: Type.Integer(), id: Type.String(), state: State, hash: Sha256, note: Type.String(),
  created_by: Type.String({ description: 'principal that saved it' }), created_at: Time,
  activated_at: NullableTime, activated_by: Type.Union([Type.String(), Type.Null()]), retired_at: NullableTime,
}, CLOSED);

// The description tells clients (and the wire test) this body's own size limit.
const BIG_BODY = { additionalProperties: false, description: `Body limit: ${POLICY_BODY_LIMIT} bytes.` };
const SaveBody = Type.Object({
  policy: PolicyDocumentSchema,
  note: multiLineText(2000, 'Why this version exists'),
}, BIG_BODY);
const Saved = Type.Object({ version: Type.Integer(), id: Type.String(), state: Type.Literal('saved'), hash: Sha256, note: Type.String(), created_by: Type.String(), created_at: Time }, CLOSED);

const ActiveBody = Type.Object({ ...VersionSummary.properties, state: Type.Literal('active'), policy: Type.Unknown() }, CLOSED);

// Query strings are not coerced, so limit is a decimal string here (1-500).
const VersionsQuery = Type.Object({
  cursor: Type.Optional(PageCursor),
  limit: Type.Optional(PageLimit),
}, CLOSED);
const VersionsPage = Type.Object({ items: Type.Array(VersionSummary), next_cursor: Type.Union([Type.String(), Type.Null()]) }, CLOSED);

const ActivateBody = Type.Object({ version: VersionNumber }, CLOSED);
const Activated = Type.Object({
  version: Type.Integer(), hash: Sha256, state: Type.Literal('active'), activated_at: Time, activated_by: Type.String(),
  previous_version: Type.Union([Type.Integer(), Type.Null()]),
}, CLOSED);

const SimRequest = Type.Object({
  agent: Type.Optional(Type.String({ maxLength: 2048, description: 'agent DID; required (a request without it is refused with agent_required)' })),
  action: Type.Optional(Type.String({ maxLength: 256 })),
  resource: Type.Optional(Type.String({ maxLength: 2048 })),
  amount: Type.Optional(Money),
  request_time: Type.Optional(Type.String({ maxLength: 64, description: 'RFC 3339; defaults to the server clock' })),
  delegation_depth: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
  permit_commitment: Type.Optional(Type.String({ maxLength: 128 })),
  root_permit_commitment: Type.Optional(Type.String({ maxLength: 128, description: 'the chain\'s root permit (the one the project issued); for a root permit, the same as permit_commitment' })),
}, CLOSED);
const SimulateBody = Type.Object({ request: SimRequest, policy: Type.Optional(PolicyDocumentSchema) }, BIG_BODY);
const Effect = Type.Union([Type.Literal('ALLOW'), Type.Literal('DENY'), Type.Literal('REQUIRE_APPROVAL')]);
const Simulated = Type.Object({
  policy_decision: Effect, policy_reason: Type.String(),
  policy_version: Type.Union([Type.Integer(), Type.Null()], { description: 'null when a submitted document was simulated' }),
  policy_hash: Sha256, matched_rules: Type.Array(Type.String()), indeterminate_rules: Type.Array(Type.String()), steps: Type.Integer(),
}, CLOSED);

const ReplayBody = Type.Object({
  version: Type.Optional(VersionNumber),
  policy: Type.Optional(PolicyDocumentSchema),
  last: Type.Optional(Type.Integer({ minimum: 1, maximum: REPLAY_MAX, description: 'newest decisions to replay (default 1000)' })),
  from: Type.Optional(Time),
  until: Type.Optional(Time),
}, BIG_BODY);
const Inputs = Type.Object({
  agent: Type.String(), action: Type.String(), resource: Type.String(),
  amount: Type.Union([Type.Object({ minor: Type.Integer(), currency: Type.String() }), Type.Null()]),
  delegation_depth: Type.Integer(), permit_commitment: Type.Union([Type.String(), Type.Null()]),
  root_permit_commitment: Type.Union([Type.String(), Type.Null()], { description: 'derived from the permits table: null when the permit never verified' }), request_time: Type.String(),
});
const Replayed = Type.Object({
  candidate: Type.Object({ version: Type.Union([Type.Integer(), Type.Null()]), hash: Sha256 }),
  window: Type.Object({ from: Type.Union([Type.String(), Type.Null()]), until: Type.Union([Type.String(), Type.Null()]), last: Type.Integer() }),
  considered: Type.Integer(), evaluated: Type.Integer(), unchanged: Type.Integer(), changed: Type.Integer(),
  skipped: Type.Record(Type.String(), Type.Integer()),
  transitions: Type.Record(Type.String(), Type.Integer(), { description: 'e.g. {"ALLOW->DENY": 3}' }),
  samples: Type.Array(Type.Object({
    decision_id: Type.String(), request_id: Type.String(), created_at: Type.String(), inputs: Inputs,
    old: Type.Object({ decision: Type.String(), reason_code: Type.String(), policy_version: Type.Union([Type.Integer(), Type.Null()]), matched_rules: Type.Unknown() }),
    new: Type.Object({ decision: Effect, reason_code: Type.String(), matched_rules: Type.Array(Type.String()) }),
  })),
});

const auth = (request: FastifyRequest): AuthContext => request.auth as AuthContext;

function encodeVersionCursor(version: number): string {
  return Buffer.from(JSON.stringify({ v: version })).toString('base64url');
}
function decodeVersionCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  try {
    const parsed = parseJsonExactly(Buffer.from(cursor, 'base64url').toString('utf8'));
    // A version the column cannot hold was never issued (PostgreSQL's integer refuses the comparison).
    if (Number.isSafeInteger(parsed?.v) && parsed.v >= 1 && parsed.v <= MAX_VERSION) return parsed.v as number;
  } catch { /* fall through */ }
  throw invalidCursor(cursor);
}

/** How one plane (API keys or console sessions) guards and names the policy routes. */
export interface PolicyPlane {
  base: string;
  authenticate: (roles: Role[]) => ((request: FastifyRequest) => Promise<void>) & { requiredRoles: readonly string[] };
  /** The credential `authenticate` demands, for the routes' error responses. */
  auth: 'apiKey' | 'session';
  tags: string[];
  security: Record<string, string[]>[];
}

/**
 * For a route with `attachValidation`: a body that broke its schema is refused with the submitted
 * document's own errors beside the schema's, every error at once (the schema does not look inside
 * `policy`; the engine does), and with those `more` finds in the body (a simulation's request
 * members). A body the schema accepts goes on: the engine checks its document once, in the service.
 */
function refuseInvalidBody(request: FastifyRequest, more?: (body: Record<string, unknown>) => FieldError[], refusal?: (errors: FieldError[]) => Problem): void {
  if (attachedErrors(request).length === 0) return;
  refuseBody(request, (body, failed) => [
    ...(body.policy !== undefined && !failed('/policy') ? policyErrors(body.policy) : []),
    ...(more?.(body) ?? []),
  ], refusal);
}

/** A simulation without its agent is refused as that (agent_required), whatever else is wrong. */
const simulationRefusal = (errors: FieldError[]) => (errors.some((e) => e.code === 'agent_required') ? agentRequired(errors) : invalidRequest(errors));

/**
 * An auth hook run before the body is read, for the routes that take documents of up to 8 MiB:
 * parsing one costs hundreds of milliseconds and tens of megabytes, which no caller without a
 * credential of the project and the route's role may make the service spend (http/body.ts bounds
 * what a credentialed one can).
 */
function beforeBody<H extends ((request: FastifyRequest) => Promise<void>) & { requiredRoles: readonly string[] }>(hook: H) {
  return Object.assign(async (request: FastifyRequest, _reply: FastifyReply, payload: RequestPayload) => {
    await hook(request);
    return payload;
  }, { requiredRoles: hook.requiredRoles });
}

/** Registers the policy lifecycle routes for one plane; both planes share every handler. */
export async function registerPolicyRoutes(instance: FastifyInstance, plane: PolicyPlane): Promise<void> {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { store, clock } = app.gavel;
  const { base, authenticate, tags: TAGS, security } = plane;
  const read: RouteShape = { auth: plane.auth };
  const write: RouteShape = { auth: plane.auth, body: true };
  // Each plane's operations are named apart in the OpenAPI document: the console's carry its prefix.
  const opId = (name: string) => (plane.auth === 'session' ? `console${name[0]!.toUpperCase()}${name.slice(1)}` : name);

  app.put(base, {
    bodyLimit: POLICY_BODY_LIMIT,
    // Up to 8 MiB: the caller is authenticated before the body is read (beforeBody).
    preParsing: beforeBody(authenticate(['POLICY_AUTHOR'])),
    attachValidation: true,
    schema: {
      operationId: opId('savePolicy'),
      tags: TAGS, security, summary: 'Save a new policy version (never activates it)', params: ProjectParams, body: SaveBody,
      response: { 201: Saved, ...errorResponses(write) },
    },
  }, async (request, reply) => {
    refuseInvalidBody(request);
    const a = auth(request);
    const saved = await savePolicyVersion(store, {
      projectId: a.projectId, principalId: a.principalId, actor: a.actor,
      document: request.body.policy, note: request.body.note, at: clock.now(),
    });
    return reply.code(201).send(saved);
  });

  app.get(base, {
    preValidation: authenticate([]),
    schema: {
      operationId: opId('getActivePolicy'),
      tags: TAGS, security, summary: 'The active policy version, its document hash and its document (404 no_active_policy when none; 500 policy_integrity when it is damaged in storage)',
      params: ProjectParams, response: { 200: ActiveBody, ...errorResponses(read, { 404: ['no_active_policy'], 500: ['policy_integrity'] }) },
    },
  }, async (request, reply) => {
    const active = await readActiveVersion(store.db, auth(request).projectId);
    // Pre-serialized (services/policy/read.ts): a string with a JSON type skips the serializer.
    return reply.type('application/json; charset=utf-8').send(activeVersionJson(active) as never);
  });

  app.get(`${base}/versions`, {
    preValidation: authenticate([]),
    schema: {
      operationId: opId('listPolicyVersions'),
      tags: TAGS, security, summary: 'Every policy version with its state, creator, note and hash, newest first',
      params: ProjectParams, querystring: VersionsQuery, response: { 200: VersionsPage, ...errorResponses(read) },
    },
  }, async (request) => {
    const limit = request.query.limit === undefined ? 50 : Number(request.query.limit);
    const rows = await listVersions(store.db, auth(request).projectId, limit, decodeVersionCursor(request.query.cursor));
    const items = rows.slice(0, limit);
    const lastItem = items[items.length - 1];
    return { items, next_cursor: rows.length > limit && lastItem ? encodeVersionCursor(lastItem.version) : null };
  });

  /** What an activation, or its refusal, records of the caller and the version asked for. */
  const activation = (a: AuthContext, version: number | null) => ({ projectId: a.projectId, principalId: a.principalId, actor: a.actor, roles: a.roles, version, now: () => clock.now() });

  app.post(`${base}/activate`, {
    // Authenticate any key of the project, then refuse (and audit) a caller without POLICY_AUTHOR
    // before the body is even validated: every refused activation attempt leaves a trace.
    // requiredRoles: what the OpenAPI document states (http/openapi-roles.ts); the check is below.
    preValidation: Object.assign(async (request: FastifyRequest) => {
      await authenticate([])(request);
      const a = auth(request);
      if (!a.roles.has('POLICY_AUTHOR')) {
        const raw = (request.body as { version?: unknown } | null | undefined)?.version;
        const version = Number.isSafeInteger(raw) ? (raw as number) : null;
        throw await refuseActivation(store, activation(a, version), 'role_missing');
      }
    }, { requiredRoles: ['POLICY_AUTHOR'] as const }),
    // A POLICY_AUTHOR's body the schema refuses is a refused activation too (audited below), and so
    // is one that does not parse, from a caller whose credential holds (onError).
    attachValidation: true,
    onError: async (request, _reply, error: Error & { statusCode?: number; status?: number }) => {
      const status = error instanceof Problem ? error.status : error.statusCode;
      if (request.auth || status === undefined || ![400, 413, 415].includes(status)) return;
      try { await authenticate([])(request); } catch { return; }
      const a = auth(request);
      // A caller without the role is refused for that, whatever its body, as the role check does.
      await refuseActivation(store, activation(a, null), a.roles.has('POLICY_AUTHOR') ? 'invalid_request' : 'role_missing');
    },
    schema: {
      operationId: opId('activatePolicy'),
      tags: TAGS, security, summary: 'Activate a saved policy version (POLICY_AUTHOR; ADMIN does not acquire it); audited whether it succeeds or is refused',
      params: ProjectParams, body: ActivateBody, response: { 200: Activated, ...errorResponses(write, { 403: ['four_eyes_required'], 404: ['policy_version_not_found'], 409: ['already_active'], 500: ['policy_integrity'] }) },
    },
  }, async (request) => {
    const a = auth(request);
    if (request.validationError) {
      const raw = (request.body as { version?: unknown } | null | undefined)?.version;
      await refuseActivation(store, activation(a, Number.isSafeInteger(raw) ? raw as number : null), 'invalid_request');
      throw request.validationError;
    }
    return activatePolicyVersion(store, activation(a, request.body.version));
  });

  app.post(`${base}/simulate`, {
    bodyLimit: POLICY_BODY_LIMIT,
    // Up to 8 MiB: the caller is authenticated before the body is read (beforeBody).
    preParsing: beforeBody(authenticate(['POLICY_AUTHOR', 'ADMIN', 'AUDITOR'])),
    attachValidation: true,
    schema: {
      operationId: opId('simulatePolicy'),
      tags: TAGS, security, summary: 'Simulate one request against the active policy or a submitted document; authorizes nothing, spends nothing, audits nothing',
      params: ProjectParams, body: SimulateBody, response: { 200: Simulated, ...errorResponses(write, { 400: ['agent_required'], 404: ['no_active_policy'], 500: ['policy_integrity'] }) },
    },
  }, async (request) => {
    refuseInvalidBody(request, (body) => simulationErrors(body.request), simulationRefusal);
    return simulatePolicy(store.db, auth(request).projectId, request.body, clock.now()) as Promise<never>;
  });

  app.post(`${base}/replay`, {
    bodyLimit: POLICY_BODY_LIMIT,
    // Up to 8 MiB: the caller is authenticated before the body is read (beforeBody).
    preParsing: beforeBody(authenticate(['POLICY_AUTHOR', 'ADMIN', 'AUDITOR'])),
    attachValidation: true,
    schema: {
      operationId: opId('replayPolicy'),
      tags: TAGS, security, summary: 'Replay recorded decisions against a candidate version or document and report which would change',
      params: ProjectParams, body: ReplayBody, response: {
        200: Replayed,
        ...errorResponses(write, {
          404: ['policy_version_not_found'], 500: ['policy_integrity', 'log_damaged'],
          503: { what: 'Temporarily unavailable; retry after `retry-after`: as many replays as an instance runs at once (two) are running (`busy`), the service has begun to stop (`shutting_down`), the database does not answer (`database_unavailable`) or its disk is full (`storage_full`)', codes: ['busy'] },
        }),
      },
    },
  }, async (request) => {
    refuseInvalidBody(request, replayCandidateErrors);
    return replayPolicy(store.db, auth(request).projectId, request.body) as Promise<never>;
  });

  
}

export async function policyMachineRoutes(app: FastifyInstance): Promise<void> {
  await registerPolicyRoutes(app, { base: '/v1/projects/:projectId/policy', authenticate: machineAuth, auth: 'apiKey', tags: ['policy'], security: [{ apiKey: [] }] });
}
