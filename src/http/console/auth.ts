// POST /v1/console/register, /login, /logout.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { normalizeName } from '../../domain/access/names.ts';
import { SESSION_LIFETIMES } from '../../domain/access/session-lifetime.ts';
import { csrfKey, mintCsrfToken } from '../../services/identity/csrf.ts';
import { login, prepareLogin } from '../../services/identity/login.ts';
import { registerPerson } from '../../services/identity/register.ts';
import { endSessionByToken } from '../../services/identity/sessions.ts';
import { takeRegistration } from '../../services/identity/throttle.ts';
import { Problem, retryLater } from '../problem.ts';
import { refuseBody } from '../errors.ts';
import { credentialErrors } from '../credential-errors.ts';
import { errorResponses } from '../schemas/common.ts';
import { checkSameOrigin, clearSessionCookies, consoleAuth, deviceCookies, sessionToken, sessionTokens, setDeviceCookie, setSessionCookies } from '../auth/session.ts';
import { Name, Password } from './schemas.ts';

const Credentials = Type.Object({ name: Name, password: Password }, { additionalProperties: false });
// Public, but a cross-site POST is refused all the same (checkSameOrigin).
const CROSS_SITE = { what: 'A request from another site (Sec-Fetch-Site or Origin)', codes: ['csrf_failed'] };

export async function consoleAuthRoutes(app: FastifyInstance): Promise<void> {
  await prepareLogin();
  app.post('/v1/console/register', {
    preValidation: async (request) => checkSameOrigin(request),
    // The name and password rules report beside the schema's errors (refuseBody), every one at once.
    attachValidation: true,
    schema: {
      operationId: 'consoleRegister',
      tags: ['console'], summary: 'Registers a person (no project memberships until an ADMIN adds them)',
      body: Credentials,
      response: { 201: Type.Object({ principal_id: Type.String(), name: Type.String(), created_at: Type.String() }), ...errorResponses({ auth: 'none', body: true }, { 403: CROSS_SITE, 409: ['name_taken'], 429: { what: 'Too many registrations from this address; retry after `retry-after`', codes: ['too_many_attempts'] } }) },
    },
  }, async (request, reply) => {
    refuseBody(request, (body, failed) => credentialErrors(body, failed, true));
    const { name: raw, password } = request.body as { name: string; password: string };
    const name = normalizeName(raw);
    // Counted per address, taken or refused: a registration costs an Argon2id hash, and name_taken
    // says a name exists, so neither may be had without limit (login is throttled the same way).
    const wait = await takeRegistration(app.gavel.store, request.ip, app.gavel.clock.now());
    if (wait > 0) throw retryLater(429, 'too_many_attempts', 'too many registrations from this address; wait and try again', Math.ceil(wait / 1000));
    const p = await registerPerson(app.gavel.store, { name, password }, app.gavel.clock.now());
    return reply.code(201).send({ principal_id: p.id, name: p.name, created_at: p.created_at });
  });

  app.post('/v1/console/login', {
    preValidation: async (request) => checkSameOrigin(request),
    schema: {
      operationId: 'consoleLogin',
      tags: ['console'], summary: 'Exchanges a password for a session cookie and a CSRF token',
      description: 'Sets the HttpOnly session cookie, the CSRF cookie and the HttpOnly device cookie (180 days); echo the CSRF token in x-csrf-token on every console mutation. A wrong name or password gives the same 401; repeated failures give 429 with Retry-After. A request carrying the device cookie from an earlier sign-in to the same name is throttled on that device\'s own counter instead of the account\'s, so a lock others run up on the account does not stop a browser its owner signed in from before.',
      body: Credentials,
      response: {
        200: Type.Object({
          principal_id: Type.String(), name: Type.String(), csrf_token: Type.String(), expires_at: Type.String(),
          idle_timeout_seconds: Type.Integer(),
        }),
        ...errorResponses({ auth: 'none', body: true }, {
          401: { what: 'The name or the password is wrong (one answer for either)', codes: ['invalid_credentials'] },
          403: CROSS_SITE,
          429: { what: 'Too many failed sign-ins for this name (or, with a device cookie, from this device) or from this address; retry after `retry-after`', codes: ['too_many_attempts'] },
        }),
      },
    },
  }, async (request, reply) => {
    const { name, password } = request.body as { name: string; password: string };
    const now = app.gavel.clock.now();
    const result = await login(app.gavel.store, { name, password, address: request.ip, previousTokens: sessionTokens(request), deviceCookies: deviceCookies(request) }, now);
    if (!result.ok) {
      if (result.reason === 'throttled') {
        throw retryLater(429, 'too_many_attempts', 'too many failed sign-ins; wait and try again', result.retryAfterSeconds);
      }
      throw new Problem(401, 'invalid_credentials', 'the name or the password is wrong');
    }
    const csrf = mintCsrfToken(await csrfKey(app.gavel.store), result.session.id);
    setSessionCookies(reply, app.gavel.config, result.session.token, csrf);
    setDeviceCookie(reply, app.gavel.config, result.deviceCookie);
    // The session token (set-cookie) and the CSRF token (body) are credentials: never stored by a cache.
    reply.header('cache-control', 'no-store');
    return {
      principal_id: result.principalId, name: result.name, csrf_token: csrf, expires_at: result.session.expires_at,
      idle_timeout_seconds: SESSION_LIFETIMES.idleMs / 1000,
    };
  });

  app.post('/v1/console/logout', {
    preValidation: consoleAuth(),
    schema: {
      operationId: 'consoleLogout',
      tags: ['console'], summary: 'Ends the current session at once',
      body: Type.Object({}, { additionalProperties: false, description: 'Send {}' }),
      response: { 200: Type.Object({ ended: Type.Boolean() }), ...errorResponses({ auth: 'session', body: true, project: false }) },
    },
  }, async (request, reply) => {
    const auth = request.auth!;
    const now = app.gavel.clock.now();
    await app.gavel.store.transaction(async (trx) => {
      await endSessionByToken(trx, sessionToken(request)!, 'logout', now);
    });
    clearSessionCookies(reply, app.gavel.config);
    return { ended: true };
  });
}
