// Permits in the console: PERMIT_ISSUER issues and revokes; readers list them (spec 4.7).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { consoleAuth } from '../auth/session.ts';
import { Problem, notFound } from '../problem.ts';
import { attachedErrors } from '../errors.ts';
import { decodeKeyCursor, encodeKeyCursor } from '../paging.ts';
import { errorResponses, PageQuery, pageLimit, ProjectParams } from '../schemas/common.ts';
import { Commitment, IssuePermitBody, PermitView } from '../schemas/permits.ts';
import { AgentDid, QUEUE_AHEAD_BUSY } from '../schemas/agents.ts';
import { LAST_ISO_INSTANT } from '../../lib/time.ts';
import { instantSeconds } from '../../lib/instant.ts';
import { chainHoldingLink, permitViews, recordIssuedPermit, revokePermit, signRootPermit } from '../../services/permits/permits.ts';
import { listPermitRows } from '../../services/permits/list.ts';
import type { Static } from 'typebox';
import { lockAsHolderOf } from '../../services/identity/members.ts';
import { didKeyIsUsable, isAction, isIssuablePattern, MAX_PRESENTED_LENGTH } from '../../domain/permit/index.ts';
import { MAX_RESOURCE_LENGTH } from '../../domain/policy/formats.ts';

const ISSUERS = ['PERMIT_ISSUER'] as const;

// The types the issuance's claim checks read each member as (a string unless listed).
const isString = (v: unknown) => typeof v === 'string';
const isStrings = (v: unknown) => Array.isArray(v) && v.every(isString);
const isMoney = (v: unknown) => isString((v as { currency?: unknown } | null | undefined)?.currency);
const CLAIM_TYPES: Record<string, (v: unknown) => boolean> = { actions: isStrings, resources: isStrings, max_per_request: isMoney, budget: isMoney };
const READERS = ['PERMIT_ISSUER', 'ADMIN', 'AUDITOR'] as const;
const RevokeBody = Type.Object({
  permit: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_PRESENTED_LENGTH,
    description: 'A delegated permit chain holding the link to revoke (`root~…~leaf`), for a link no decision has presented yet: it must verify for this project (time aside) and is recorded, then revoked. Not needed for a root permit or a link already seen.' })),
}, { additionalProperties: false });
const CommitmentParams = Type.Object({ projectId: ProjectParams.properties.projectId, commitment: Commitment }, { additionalProperties: false });

/** An exact resource (no "*") past a request's bound can match nothing: said as such, not as a wrong form. */
const exactTooLong = (pattern: string): string | undefined => (!pattern.endsWith('*') && pattern.length > MAX_RESOURCE_LENGTH
  ? `an exact resource of ${pattern.length} characters names none a request may (a requested resource is at most ${MAX_RESOURCE_LENGTH}); end it in "*" to cover resources starting with its first ${MAX_RESOURCE_LENGTH}`
  : undefined);

export async function consolePermitRoutes(app: FastifyInstance): Promise<void> {
  const tags = ['permits'];
  const P = '/v1/console/projects/:projectId/permits';

  app.post(P, {
    schema: { operationId: 'consoleIssuePermit', tags, summary: 'Issue a permit to an agent (the permit is returned once, in full)', params: ProjectParams, body: IssuePermitBody,
      response: { 201: Type.Object({ permit: Type.String({ description: 'Compact JWS to hand to the agent' }), ...PermitView.properties }), ...errorResponses({ auth: 'session', body: true }, { 422: ['invalid_permit_claims'], 503: ['signing_key_mismatch'] }) } },
    preValidation: consoleAuth([...ISSUERS]),
    // The schema's errors come to the handler, to be returned with the claim checks' in one answer.
    attachValidation: true,
  }, async (request, reply) => {
    const body = request.body as Static<typeof IssuePermitBody>;
    const now = app.gavel.clock.now();
    const errors = attachedErrors(request);
    if (errors.length > 0 && (typeof body !== 'object' || body === null || Array.isArray(body))) throw new Problem(400, 'invalid_request', 'the permit request is not valid; see errors', { errors });
    // The claim checks below read only members the schema found well formed (when it stops early,
    // as on a string that is not text, a member it did not reach may be anything: typed here too).
    const bad = new Set(errors.map((e) => e.pointer.split('/')[1]));
    const raw = body as Record<string, unknown>;
    const ok = (member: string) => !bad.has(member) && (CLAIM_TYPES[member] ?? isString)(raw[member]);
    // A permit's times are whole seconds (JWT NumericDate), rounded here so that the permit is never
    // valid at an instant its issuer excluded (its start up, its expiry down), and the checks below,
    // the stored view and the signed claims all speak of the same instants.
    const expiresAt = ok('expires_at') ? wholeSecond(body.expires_at, false) : undefined;
    const notBefore = ok('not_before') ? wholeSecond(body.not_before!, true) : undefined;
    if (expiresAt && expiresAt <= now) errors.push({ pointer: '/expires_at', code: 'in_the_past', message: 'expires_at must be in the future' });
    // Stored as ISO text that sorts as time: a later instant ("+010000-…") would read as long past.
    for (const [member, at] of [['expires_at', expiresAt], ['not_before', notBefore]] as const) {
      if (at && at.getTime() > LAST_ISO_INSTANT) errors.push({ pointer: `/${member}`, code: 'out_of_range', message: `${member} must be no later than 9999-12-31T23:59:59Z` });
    }
    // The claims are Unix seconds, which start at 1970 (an expiry before then is in_the_past already).
    if (notBefore && notBefore.getTime() < 0) errors.push({ pointer: '/not_before', code: 'out_of_range', message: 'not_before must be no earlier than 1970-01-01T00:00:00Z' });
    if (notBefore && expiresAt && notBefore >= expiresAt) errors.push({ pointer: '/not_before', code: 'after_expiry', message: 'not_before must be before expires_at' });
    if (ok('max_per_request') && ok('budget') && body.max_per_request!.currency !== body.budget!.currency) {
      errors.push({ pointer: '/max_per_request', code: 'currency_mismatch', message: 'max_per_request and budget must use the same currency' });
    }
    // What the permit's own claim check would refuse, each at its place, so every error comes at once.
    if (ok('agent') && !didKeyIsUsable(body.agent)) errors.push({ pointer: '/agent', code: 'invalid_did_key', message: 'a did:key must name a usable Ed25519 public key (not a point of small order)' });
    // Item by item: an item the schema already refused is not judged again, and the others still are.
    const items = (member: string) => (Array.isArray(raw[member]) ? (raw[member] as unknown[]) : [])
      .flatMap((item, i) => (typeof item === 'string' && !errors.some((e) => e.pointer === `/${member}/${i}` || e.pointer.startsWith(`/${member}/${i}/`)) ? [[item, i] as const] : []));
    for (const [a, i] of items('actions')) if (!isAction(a)) errors.push({ pointer: `/actions/${i}`, code: 'invalid_action', message: 'an action is a name without "*", or "*" alone for any action' });
    for (const [r, i] of items('resources')) if (!isIssuablePattern(r)) errors.push({ pointer: `/resources/${i}`, code: 'invalid_pattern', message: exactTooLong(r) ?? 'a resource pattern is a resource URI (non-empty segments, no dot segments, escapes only for what it cannot hold as is, in uppercase hex: no encoded letter, digit, "/", "\\", ".", "%", "#", "?" or control character; a first segment in lowercase without "@", ":" or a trailing dot; no ";"), optionally ending in one "*" (docs/policy-language.md)' });
    if (errors.length) throw new Problem(400, 'invalid_request', 'the permit request is not valid; see errors', { errors });
    if (!expiresAt) throw new Error('unreachable: expires_at is required and was found well formed');
    const input = {
      projectId: request.auth!.projectId, agent: body.agent, actor: request.auth!.actor, now, expiresAt,
      ...(notBefore ? { notBefore } : {}),
      constraints: {
        actions: body.actions, resources: body.resources,
        ...(body.max_per_request ? { max_per_request: body.max_per_request } : {}),
        ...(body.budget ? { budget: body.budget } : {}),
        ...(body.max_uses !== undefined ? { max_uses: body.max_uses } : {}),
      },
    };
    const jws = await signRootPermit(app.gavel.signer, input);
    // Under the roles lock, the issuer's role read again: one demoted or removed meanwhile issues nothing after that.
    const permit = await app.gavel.store.transaction(async (trx) => {
      await lockAsHolderOf(trx, app.gavel.store, input.projectId, input.actor, ISSUERS);
      return recordIssuedPermit(trx, input, jws);
    });
    // The permit is a bearer credential: no cache keeps this response.
    reply.header('cache-control', 'no-store');
    return reply.code(201).send({ permit: jws, ...permit });
  });

  app.get(P, {
    schema: { operationId: 'consoleListPermits', tags, summary: 'Permits of the project, newest first', params: ProjectParams,
      querystring: Type.Object({ ...PageQuery.properties, agent: Type.Optional(AgentDid) }, { additionalProperties: false }),
      response: { 200: Type.Object({ permits: Type.Array(PermitView), next_cursor: Type.Union([Type.String(), Type.Null()]) }), ...errorResponses({ auth: 'session' }) } },
    preValidation: consoleAuth([...READERS]),
  }, async (request) => {
    const q = request.query as { cursor?: string; limit?: string; agent?: string };
    const limit = pageLimit(q.limit);
    const before = decodeKeyCursor(q.cursor, 'permits');
    const rows = await listPermitRows(app.gavel.store.db, request.auth!.projectId, { agent: q.agent, before, limit: limit + 1 });
    const now = app.gavel.clock.now();
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return {
      permits: await permitViews(app.gavel.store.db, request.auth!.projectId, items, now),
      next_cursor: rows.length > limit && last ? encodeKeyCursor(`${last.created_at}~${last.commitment}`, 'permits') : null,
    };
  });

  app.get(`${P}/:commitment`, {
    schema: { operationId: 'consoleGetPermit', tags, summary: 'One permit', params: CommitmentParams, response: { 200: PermitView, ...errorResponses({ auth: 'session' }, { 404: ['not_found'] }) } },
    preValidation: consoleAuth([...READERS]),
  }, async (request) => {
    const { commitment } = request.params as { commitment: string };
    const row = await app.gavel.store.db.selectFrom('permits').selectAll().where('project_id', '=', request.auth!.projectId).where('commitment', '=', commitment).executeTakeFirst();
    if (!row) throw notFound('no permit with this commitment in the project');
    return (await permitViews(app.gavel.store.db, request.auth!.projectId, [row], app.gavel.clock.now()))[0];
  });

  app.post(`${P}/:commitment/revoke`, {
    schema: { operationId: 'consoleRevokePermit', tags, summary: 'Revoke a permit and everything delegated from it, on the next decision everywhere', params: CommitmentParams,
      body: RevokeBody, response: { 200: PermitView, ...errorResponses({ auth: 'session', body: true }, { 404: ['not_found'], 409: ['already_revoked'], 422: ['permit_invalid', 'commitment_not_in_chain'], ...QUEUE_AHEAD_BUSY }) } },
    preValidation: consoleAuth(['PERMIT_ISSUER', 'ADMIN']),
  }, async (request) => {
    const { commitment } = request.params as { commitment: string };
    const { permit: presented } = request.body as Static<typeof RevokeBody>;
    const projectId = request.auth!.projectId;
    const chain = presented === undefined ? undefined : await chainHoldingLink(app.gavel.signer, projectId, presented, commitment);
    return app.gavel.store.transaction((trx) => revokePermit(trx, {
      projectId, commitment, actor: request.auth!.actor, now: () => app.gavel.clock.now(), dialect: app.gavel.store.dialect, ...(chain ? { chain } : {}),
    }));
  });
}

/** An instant the schema's date-time format admitted, as a whole second: at or before it, or with `up` at or after it. */
const wholeSecond = (iso: string, up: boolean) => new Date(instantSeconds(iso, up)! * 1000);
