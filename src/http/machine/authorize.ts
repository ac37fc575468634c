// POST /v1/authorize (spec 2.1, 2.4, 4.1). The API key names the project.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { Type, type Static } from 'typebox';
import { authenticateApiKey, cachedApiKeyContext } from '../auth/api-key.ts';
import { bearerUnauthorized, escapePointer, listedErrors, MAX_FIELD_ERRORS, Problem, retryLater, type FieldError } from '../problem.ts';
import { attachedErrors } from '../errors.ts';
import type { AppDeps, AuthContext } from '../deps.ts';
import { StaleReadEpoch, type ReadTag } from '../../store/read-epoch.ts';
import type { AuthorizeInput } from '../../services/authorize/authorize.ts';
import { errorResponses, HIDES_IN_A_STATEMENT, Money, oneLineText } from '../schemas/common.ts';
import { AgentDid } from '../schemas/agents.ts';
import { ACTION_PATTERN } from '../../domain/policy/formats.ts';
import { REQUEST_RESOURCE_FORMAT } from '../validation.ts';
import { POLICY_REASONS } from '../../domain/policy/index.ts';
import { DECISION_REASONS } from '../../domain/decision/combine.ts';

const NAME_PATTERN = '^[A-Za-z0-9_.-]+$';
const NAME_FORM = '1 to 64 letters, digits, "_", "." or "-"';

export const ExecutionRequest = Type.Object({
  // A refusal's message is the description (http/errors.ts), so each patterned member's says its form first.
  merchant: Type.String({ minLength: 1, maxLength: 64, pattern: NAME_PATTERN, description: `${NAME_FORM}: a configured merchant` }),
  operation: Type.String({ minLength: 1, maxLength: 64, pattern: NAME_PATTERN, description: `${NAME_FORM}: an operation of that merchant` }),
  payload: Type.Object({}, { additionalProperties: true, description: 'Operation payload, sent to the merchant as JSON. Where the operation is configured with the place of its amount, the payload must carry the request\'s `amount` there, else 400 invalid_request before any decision (docs/executions.md)' }),
  nonce: Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21-\\x7e]+$', description: '1 to 128 printable ASCII characters, no spaces: chosen by the caller, unique per action' }),
}, { additionalProperties: false, description: 'There is no url field: merchants are deployment configuration' });

export const AuthorizeBody = Type.Object({
  agent: AgentDid,
  // No length bounds of its own (the body limit bounds it): an empty or oversized permit is one that
  // does not verify, so it is a recorded DENY permit_invalid (`malformed`, `too_large`), like any other.
  permit: Type.String({ description: 'Permit artifact: compact JWS, or a delegation chain joined by ~ (at most 16384 characters, else DENY permit_invalid too_large)' }),
  action: Type.String({ minLength: 1, maxLength: 64, pattern: ACTION_PATTERN, description: '1 to 64 printable ASCII characters, no spaces' }),
  resource: Type.String({ minLength: 12, maxLength: 512, format: REQUEST_RESOURCE_FORMAT, description: 'resource://<path>: non-empty segments of RFC 3986 path characters, no "*", no dot segments (also percent-encoded, or with parameters as in "..;"), escapes only for what it cannot hold as is, in uppercase hex (no encoded letter, digit, "/", "\\", ".", "%" or control character), escapes that decode as UTF-8 in NFC, a first segment in lowercase without "@" or ":", no ";", no query or fragment (docs/policy-language.md)' }),
  amount: Type.Optional(Money),
  intent: Type.Optional(oneLineText(128, 'An intent id, chosen by the caller, which an approver reads in the statement they sign; an approval covers a request only with the intent its obligation states (the request names the obligation by approval_request_id, docs/approvals.md)')),
  approval_request_id: Type.Optional(Type.String({ pattern: '^apr_[0-9a-z]{26}$', description: 'apr_ followed by 26 lowercase letters and digits: an approved obligation this exact request discharges (docs/approvals.md)' })),
  execution: Type.Optional(ExecutionRequest),
  chain_authorization: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Chain-authorization alternative (deployments that sign for a chain)' })),
}, { additionalProperties: false });
export type AuthorizeBodyT = Static<typeof AuthorizeBody>;

/** Every reason_code a decision carries (docs/reason-codes.md): the policy's, the combination's, and `replay` (answered below). */
export const REASON_CODES: readonly string[] = [...Object.values(POLICY_REASONS), ...Object.values(DECISION_REASONS), 'replay'];

export const AuthorizeResponse = Type.Object({
  decision: Type.Union([Type.Literal('ALLOW'), Type.Literal('DENY'), Type.Literal('REQUIRE_APPROVAL'), Type.Literal('REPLAY')]),
  reason_code: Type.String({ description: `One of ${REASON_CODES.join(', ')} (docs/reason-codes.md)` }),
  policy_version: Type.Union([Type.Integer(), Type.Null()], { description: 'The policy version that decided; null when the project has no active policy, whatever the reason (docs/reason-codes.md)' }),
  request_id: Type.String(),
  audit_id: Type.String(),
  detail: Type.Optional(Type.String({ description: 'Which check failed, for DENY decisions; for REQUIRE_APPROVAL, why a named approval did not apply' })),
  approval_request_id: Type.Optional(Type.String({ description: 'For REQUIRE_APPROVAL, the obligation to approve: the one this decision opened, or the still-pending one the request named; for ALLOW approval_granted, the obligation whose approval this decision consumed (docs/approvals.md)' })),
  execution: Type.Optional(Type.Object({
    id: Type.String(),
    status: Type.Union([Type.Literal('SUCCEEDED'), Type.Literal('FAILED'), Type.Literal('UNKNOWN')]),
  }, { description: 'Present only when the decision is ALLOW (or REPLAY) and an execution was requested' })),
}, { description: `The decision, audited whatever it is (or REPLAY of an execution already made); reason_code is one of ${REASON_CODES.join(', ')}` });

/**
 * Refusals the schema cannot name precisely: both alternatives, a url inside execution, and text in
 * execution an approval's statement would show otherwise than it is sent (400 invalid_request). The
 * refusal keeps its own code (both alternatives first) and carries every other error of the body
 * (`schemaErrors`, the schema's: inside `execution` and `chain_authorization` too), so all come at
 * once; only the schema's "not allowed" for `execution.url` is left out, being the same error.
 */
export function refuseAmbiguousRequest(body: unknown, schemaErrors: readonly FieldError[]): void {
  const found = ambiguity(body);
  if (!found) return;
  const { both, urls, hidden } = found;
  const own: FieldError[] = [];
  const conflict = (pointer: string) => ({ pointer, code: 'both_execution_and_chain_authorization', message: 'send execution or chain_authorization, not both' });
  if (both) own.push(conflict('/execution'), conflict('/chain_authorization'));
  for (const pointer of urls) own.push({ pointer, code: 'execution_url_not_allowed', message: 'url is not allowed in execution' });
  for (const pointer of hidden) own.push({ pointer, code: 'bad_format', message: HIDDEN_MESSAGE });
  const others = schemaErrors.filter((e) => !urls.includes(e.pointer));
  if (both) {
    throw new Problem(400, 'both_execution_and_chain_authorization',
      'send either an execution or a chain authorization, not both: one calls a merchant, the other issues an artifact, and doing both leaves the ALLOW ambiguous',
      { errors: listedErrors([...own, ...others]) });
  }
  if (urls.length === 0) throw new Problem(400, 'invalid_request', 'the request is not valid; see errors', { errors: listedErrors([...own, ...others]) });
  throw new Problem(400, 'execution_url_not_allowed', 'a url in execution (anywhere, its payload included) is refused: name a configured merchant and operation; the service never calls a caller-supplied URL',
    { errors: listedErrors([...own, ...others]) });
}

/** What refuseAmbiguousRequest refuses, or null (the hot path's one cheap look: a plain decision has no execution). */
function ambiguity(body: unknown): { both: boolean; urls: string[]; hidden: string[] } | null {
  if (typeof body !== 'object' || body === null) return null;
  const { execution, chain_authorization } = body as { execution?: unknown; chain_authorization?: unknown };
  if (execution === undefined) return null;
  const both = chain_authorization !== undefined;
  const urls: string[] = [];
  urlPointers(execution, urls);
  const hidden: string[] = [];
  hidingPointers(execution, hidden);
  return both || urls.length > 0 || hidden.length > 0 ? { both, urls, hidden } : null;
}

const HIDDEN_MESSAGE = 'holds a format character (such as a bidi override or a zero-width space; the joiners U+200C and U+200D are kept), a line or paragraph separator, DEL or a C1 control, which an approval\'s statement would show in another order than it is sent, or not at all';

/**
 * Visits every string and member name under `value` with its JSON pointer, while `full()` is false;
 * `member` returns false to leave a member's value unvisited. Bodies are depth-bounded where they
 * are parsed (http/body.ts); the bound here only keeps the walk finite on its own.
 */
function walkJson(value: unknown, at: string, visit: { full(): boolean; string?(s: string, at: string): void; member(name: string, at: string): boolean }, depth = 0): void {
  if (visit.full() || depth > 128) return;
  if (typeof value === 'string') { visit.string?.(value, at); return; }
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) walkJson(value[i], `${at}/${i}`, visit, depth + 1);
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    if (visit.full()) return;
    const pointer = `${at}/${escapePointer(k)}`;
    if (visit.member(k, pointer)) walkJson(v, pointer, visit, depth + 1);
  }
}

/**
 * Where a string or member name in `execution` holds a character an approval's statement would show
 * the approver otherwise than it is sent (HIDES_IN_A_STATEMENT: the call is in the statement,
 * decision 0503, and RFC 8785 keeps these characters as they are): `{"to": "\u202e4321-98ED"}`
 * reads as another account than the one paid. The rule intent already follows (decision 0500).
 */
function hidingPointers(execution: unknown, out: string[]): void {
  walkJson(execution, '/execution', {
    full: () => out.length > MAX_FIELD_ERRORS,
    string: (s, at) => { if (HIDES_IN_A_STATEMENT.test(s)) out.push(at); },
    member: (name, at) => (HIDES_IN_A_STATEMENT.test(name) ? (out.push(at), false) : true),
  });
}

/**
 * Where members named `url` sit in `execution`, at any depth (its payload included), each pushed on
 * `out`: the executions issue refuses "a `url` anywhere in `execution`" by name, in any case of its
 * letters (`URL`, `Url`: a merchant reading names loosely would see the same field), and every error
 * comes at once (decision 0001).
 */
function urlPointers(execution: unknown, out: string[]): void {
  walkJson(execution, '/execution', {
    full: () => out.length > MAX_FIELD_ERRORS,
    member: (name, at) => (name.length === 3 && name.toLowerCase() === 'url' ? (out.push(at), false) : true),
  });
}

const NO_PARAMETERS: string[] = [];

/**
 * The route takes no query parameter, as no /v1 route takes one it does not declare (http/app.ts):
 * `?dry_run=true` must not be answered with a decision, spent and perhaps executed, as if obeyed.
 * Checked here rather than by a querystring schema, so a plain decision does no more than look for a "?".
 */
function refuseQuery(names: readonly string[]): void {
  const errors = names.map((name) => ({ pointer: `/${escapePointer(name)}`, code: 'unknown_field', message: 'is not a known field', in: 'query' as const }));
  throw new Problem(400, 'invalid_request', 'the query string is not valid; see errors', { errors: listedErrors(errors) });
}

/** A decision planned under a stale read epoch is redone at most this many times in all. */
const MAX_STALE_ATTEMPTS = 5;

type DecideContext = { projectId: string; actor: string; requestId: string; now: Date; epoch?: ReadTag | undefined };

async function decideAndAnswer(gavel: AppDeps, ctx: DecideContext, input: AuthorizeInput, body: AuthorizeBodyT) {
  if (body.execution) {
    // docs/executions.md: nonce check, decision with the reservation inside it, one merchant call.
    const out = await gavel.executions.run(ctx, input, body.execution, (onAllow) => gavel.authorizer.decide(ctx, input, onAllow));
    if (out.kind === 'replay') {
      return { decision: 'REPLAY' as const, reason_code: 'replay', policy_version: out.policy_version, request_id: ctx.requestId, audit_id: out.audit_id, execution: out.execution };
    }
    const r = out.record;
    return {
      decision: r.decision, reason_code: r.reason_code, policy_version: r.policy_version, request_id: r.request_id, audit_id: r.audit_id,
      ...(r.detail ? { detail: r.detail } : {}),
      ...(r.approval_request_id ? { approval_request_id: r.approval_request_id } : {}),
      ...(out.execution ? { execution: out.execution } : {}),
    };
  }
  const record = await gavel.authorizer.decide(ctx, input);
  return {
    decision: record.decision, reason_code: record.reason_code, policy_version: record.policy_version,
    request_id: record.request_id, audit_id: record.audit_id,
    ...(record.detail ? { detail: record.detail } : {}),
    ...(record.approval_request_id ? { approval_request_id: record.approval_request_id } : {}),
  };
}

export async function authorizeRoutes(app: FastifyInstance): Promise<void> {
  app.post('/v1/authorize', {
    schema: {
      operationId: 'authorize',
      tags: ['decision'], summary: 'Decide whether an agent may perform an action on a resource',
      description: 'Decides from the agent\'s frozen state, its permit and the project\'s active policy (and an approval the request names). '
        + 'Every decision, ALLOW or not, is HTTP 200 and audited; a refusal of the request itself is a problem+json error and records nothing. '
        + 'With `execution`, an ALLOW also calls the named merchant operation, once per nonce (docs/executions.md).',
      security: [{ apiKey: [] }],
      body: AuthorizeBody,
      response: {
        200: AuthorizeResponse,
        // As thrown in src/ (http/errors.ts, services/executions/errors.ts, below). The key names the
        // project: a key of another one is a 401 (bearerUnauthorized), and no role is needed, so never 403.
        ...errorResponses({ auth: 'apiKey', body: true, project: false }, {
          400: ['both_execution_and_chain_authorization', 'execution_url_not_allowed'],
          409: ['nonce_reused', 'execution_in_progress'],
          422: ['chain_authorization_unavailable', 'unknown_merchant', 'unknown_operation'],
          503: { what: 'Temporarily unavailable; retry after `retry-after`: access rules kept changing while deciding (`busy`, nothing was recorded), the service has begun to stop (`shutting_down`), the database does not answer (`database_unavailable`) or its disk is full (`storage_full`)', codes: ['busy'] },
        }),
      },
    },
    // Callback style: a plain decision whose key context is cached (the usual one) passes without a
    // promise.
    // requiredRoles: none (any key of the project), as the OpenAPI document states (http/openapi-roles.ts).
    preValidation: Object.assign((request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      // A plain decision checks the key's cached context at its commit (store/read-epoch.ts); one
      // with an execution authenticates first, since a repeated nonce is answered before deciding.
      // Any valid key of a project may ask (the key names the project; no role is needed).
      const body = request.body as { execution?: unknown; chain_authorization?: unknown } | null | undefined;
      const deferEpoch = typeof body === 'object' && body !== null && body.execution === undefined && body.chain_authorization === undefined;
      const accept = (auth: AuthContext, fromCache: boolean) => {
        request.auth = auth;
        request.authFromCache = fromCache;
        done();
      };
      const hit = deferEpoch ? cachedApiKeyContext(app.gavel.store, request.headers.authorization) : undefined;
      if (hit) accept(hit, true);
      else authenticateApiKey(app.gavel.store, request.headers.authorization).then((auth) => accept(auth, false), (error: unknown) => done(error as Error));
    }, { requiredRoles: [] as const }),
    // Validation errors come to the handler, so that a key whose context was taken from the cache is
    // checked afresh first: a revoked key gets 401 whatever its body.
    attachValidation: true,
  }, async (request) => {
    const query = request.url.includes('?') ? Object.keys(request.query as object) : NO_PARAMETERS;
    const refused = request.validationError !== undefined || ambiguity(request.body) !== null || query.length > 0;
    if (refused) {
      if (request.authFromCache) request.auth = await authenticateApiKey(app.gavel.store, request.headers.authorization);
      refuseAmbiguousRequest(request.body, attachedErrors(request));
      if (request.validationError) throw request.validationError;
      refuseQuery(query);
    }
    const body = request.body as AuthorizeBodyT;
    if (body.chain_authorization !== undefined) throw new Problem(422, 'chain_authorization_unavailable', 'this deployment does not sign for a chain');
    const { gavel } = app;
    const input = { agent: body.agent, permit: body.permit, action: body.action, resource: body.resource, ...(body.amount ? { amount: body.amount } : {}), ...(body.intent ? { intent: body.intent } : {}), ...(body.approval_request_id ? { approval_request_id: body.approval_request_id } : {}) };
    for (let attempt = 1; ; attempt++) {
      const a = request.auth!;
      const ctx = { projectId: a.projectId, actor: a.actor, requestId: String(request.id), now: gavel.clock.now(), epoch: a.epoch };
      try {
        return await decideAndAnswer(gavel, ctx, input, body);
      } catch (error) {
        if (!(error instanceof StaleReadEpoch)) throw error;
        // The key, its holder or the policy pointer changed since the context was cached: nothing
        // was written. Authenticate afresh (401 if the key no longer holds) and decide again.
        if (attempt >= MAX_STALE_ATTEMPTS) throw retryLater(503, 'busy', 'access rules kept changing while deciding; retry', 1);
        request.auth = await authenticateApiKey(gavel.store, request.headers.authorization);
        if (request.auth.projectId !== a.projectId) throw bearerUnauthorized('the API key now belongs to another project', true);
      }
    }
  });
}
