// Console-route authentication: the session cookie, membership of the project in the path, the
// caller's *current* roles (read from role_grants on every request, never cached in the session),
// and, for unsafe methods, a Fetch-Metadata / Origin check plus the signed double-submit CSRF token.
import { isIP } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isLoopbackHost, type Config } from '../../config/config.ts';
import { permits, type Role } from '../../domain/access/roles.ts';
import { csrfKey, sameToken, verifyCsrfToken } from '../../services/identity/csrf.ts';
import { DEVICE_COOKIE_LIFETIME_MS } from '../../services/identity/device-cookie.ts';
import { rolesOf } from '../../services/identity/members.ts';
import { resolveSession } from '../../services/identity/sessions.ts';
import { forbidden, Problem, unauthorized } from '../problem.ts';
import { PROJECT_ID_PATTERN } from '../schemas/common.ts';
import { cookieValues } from './cookie-values.ts';

export const CSRF_HEADER = 'x-csrf-token';
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** The form of a project id: the path's projectId is read here, in preValidation, before its schema is checked. */
const PROJECT_ID = new RegExp(PROJECT_ID_PATTERN);

/** True when the console is served over TLS (config.publicUrl is https, its scheme in any case: RFC 3986 3.1). */
export const servedOverTls = (config: Config): boolean => config.publicUrl !== undefined && new URL(config.publicUrl).protocol === 'https:';

/**
 * Cookie names. Over TLS the `__Host-` prefix pins the cookie to this exact origin (Secure, Path=/,
 * no Domain). The documented development exception: over plain-HTTP loopback the browser would
 * drop a `__Host-`/Secure cookie, so the names lose the prefix and the Secure flag.
 */
export function cookieNames(config: Config): { session: string; csrf: string; device: string } {
  return servedOverTls(config)
    ? { session: '__Host-gavel_session', csrf: '__Host-gavel_csrf', device: '__Host-gavel_device' }
    : { session: 'gavel_session', csrf: 'gavel_csrf', device: 'gavel_device' };
}

const baseCookie = (config: Config) => ({ path: '/', sameSite: 'strict' as const, secure: servedOverTls(config) });

/** Sets the session cookie (HttpOnly) and the CSRF cookie (readable by the page, echoed in x-csrf-token). */
export function setSessionCookies(reply: FastifyReply, config: Config, token: string, csrf: string): void {
  const names = cookieNames(config);
  reply.setCookie(names.session, token, { ...baseCookie(config), httpOnly: true });
  reply.setCookie(names.csrf, csrf, { ...baseCookie(config), httpOnly: false });
}

/**
 * Sets the device cookie (HttpOnly, long-lived): the browser is known to the account it signed in
 * to, so a lock someone else runs up on that account does not stop it (services/identity/device-cookie.ts).
 * Logout leaves it: it says the browser signed in before, not that it is signed in.
 */
export function setDeviceCookie(reply: FastifyReply, config: Config, value: string): void {
  reply.setCookie(cookieNames(config).device, value, { ...baseCookie(config), httpOnly: true, maxAge: DEVICE_COOKIE_LIFETIME_MS / 1000 });
}

/** Every device cookie value this request carries (a planted one cannot pass the HMAC, so each is tried). */
export function deviceCookies(request: FastifyRequest): string[] {
  return cookieValues(request.headers.cookie, cookieNames(request.server.gavel.config).device);
}

export function clearSessionCookies(reply: FastifyReply, config: Config): void {
  const names = cookieNames(config);
  reply.clearCookie(names.session, { ...baseCookie(config), httpOnly: true });
  reply.clearCookie(names.csrf, { ...baseCookie(config), httpOnly: false });
}

const csrfFailed = (detail: string) => new Problem(403, 'csrf_failed', detail);

/**
 * The service's own origin: config.publicUrl's, else the Host the request was sent to when that
 * names this machine by address (an IP literal, localhost, or GAVEL_HOST). A domain name is
 * trusted only through GAVEL_PUBLIC_URL: otherwise a page whose domain an attacker points at
 * 127.0.0.1 (DNS rebinding) would be same-origin with a local console.
 */
function ownOrigin(request: FastifyRequest): string | undefined {
  const config = request.server.gavel.config;
  if (config.publicUrl) return new URL(config.publicUrl).origin;
  const host = request.headers.host;
  if (!host) return undefined;
  let hostname: string;
  try { hostname = new URL(`http://${host}`).hostname.replace(/^\[|\]$/g, ''); } catch { return undefined; }
  if (isIP(hostname) === 0 && !isLoopbackHost(hostname) && hostname !== config.host.toLowerCase()) return undefined;
  return `http://${host}`;
}

/** Refuses a cross-site unsafe request (Fetch Metadata, then Origin). Used for login/register too. */
export function checkSameOrigin(request: FastifyRequest): void {
  if (!UNSAFE.has(request.method)) return;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw csrfFailed(`cross-site request refused (Sec-Fetch-Site: ${String(site).slice(0, 40)})`);
  }
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== ownOrigin(request)) {
    throw csrfFailed('request from another origin refused (the Origin header is not this service)');
  }
}

/** Every session cookie token this request carries (more than one only when some were planted). */
export function sessionTokens(request: FastifyRequest): string[] {
  return cookieValues(request.headers.cookie, cookieNames(request.server.gavel.config).session);
}

/**
 * The session cookie token sent with this request, if any; 401 when the cookie is named twice.
 * Which of two is meant cannot be told, and the first is the one with the longest Path, which a
 * page elsewhere on the host may have planted (over plain HTTP any port's page can): read as the
 * first, a planted session of the attacker's would have the victim acting in the attacker's account.
 */
export function sessionToken(request: FastifyRequest): string | undefined {
  const tokens = sessionTokens(request);
  if (tokens.length > 1) throw repeated(cookieNames(request.server.gavel.config).session, unauthorized);
  return tokens[0];
}

const repeated = (name: string, refusal: (detail: string) => Problem) =>
  refusal(`the request carries the ${name} cookie more than once: which one is meant is ambiguous, so none is used; delete this site's cookies in the browser and sign in again`);

/**
 * Why a console request has no session, and what to do. A caller sending an API key here has
 * mistaken the plane (console routes take the cookie a sign-in sets), and "sign in" alone would not
 * tell them that the key is fine where it belongs.
 */
function noSession(request: FastifyRequest): string {
  const missing = 'sign in first (POST /v1/console/login): no live console session (missing, expired or ended)';
  return request.headers.authorization === undefined ? missing
    : `${missing}; an API key is not one: console routes take the session cookie a sign-in sets, API keys the machine routes (/v1/authorize, /v1/projects/{projectId}/…)`;
}

/**
 * preValidation for console routes. `roles` empty means any member of `{projectId}` (or, on routes
 * without a project, any signed-in person). 401 `unauthorized` without a live session; 403
 * `csrf_failed` for an unsafe method without a valid token or from another site; 403 `forbidden`
 * for a non-member or a missing role.
 */
export function consoleAuth(roles: Role[] = []) {
  // requiredRoles: read by the OpenAPI document (http/openapi-roles.ts); the check uses `roles`.
  return Object.assign(async function requireSession(request: FastifyRequest): Promise<void> {
    const { store, config, clock } = request.server.gavel;
    checkSameOrigin(request);
    const session = await resolveSession(store.db, sessionToken(request), clock.now());
    if (!session) throw unauthorized(noSession(request));
    if (UNSAFE.has(request.method)) {
      const header = request.headers[CSRF_HEADER];
      const csrfCookies = cookieValues(request.headers.cookie, cookieNames(config).csrf);
      if (csrfCookies.length > 1) throw repeated(cookieNames(config).csrf, csrfFailed);
      const cookie = csrfCookies[0];
      if (typeof header !== 'string' || typeof cookie !== 'string' || !sameToken(header, cookie) || !verifyCsrfToken(await csrfKey(store), session.id, header)) {
        throw csrfFailed(`send the CSRF token from the ${cookieNames(config).csrf} cookie in the ${CSRF_HEADER} header`);
      }
    }
    const projectId = (request.params as { projectId?: string } | undefined)?.projectId;
    let held: Role[] = [];
    if (projectId !== undefined) {
      // Not a project id: no membership can name it, and PostgreSQL cannot even compare one holding
      // a NUL (%00), which failed the query with a 500 where SQLite answered this same 403.
      if (!PROJECT_ID.test(projectId)) throw forbidden('you are not a member of this project');
      const m = await store.db.selectFrom('memberships').select('revoked_at').where('project_id', '=', projectId).where('principal_id', '=', session.principal_id).executeTakeFirst();
      if (!m || m.revoked_at) throw forbidden('you are not a member of this project');
      held = await rolesOf(store.db, projectId, session.principal_id);
    } else if (roles.length > 0) {
      throw new Error('consoleAuth with roles needs a {projectId} route parameter');
    }
    if (!permits(new Set(held), roles)) {
      throw forbidden(`this route needs one of the roles ${roles.join(', ')}; you hold ${held.join(', ') || 'none'}`);
    }
    request.auth = {
      kind: 'session', projectId: projectId ?? '', principalId: session.principal_id,
      roles: new Set(held), sessionId: session.id, actor: session.principal_id,
    };
  }, { requiredRoles: [...roles] as readonly Role[] });
}
