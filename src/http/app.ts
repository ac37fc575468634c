// Builds the Fastify application: wire conventions (problem+json, request ids, closed schemas,
// no type coercion), the OpenAPI document, and every route group. No I/O happens here.
import type { Server } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import cookie from '@fastify/cookie';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { newId } from '../lib/ids.ts';
import type { AppDeps } from './deps.ts';
import { installErrorHandling, sendProblem } from './errors.ts';
import { RouteTable } from './route-table.ts';
import { installJsonBodyParser } from './body.ts';
import { clientErrorHandler } from './client-errors.ts';
import { installMessageChecks, MAX_PIPELINED_REQUESTS } from './message-checks.ts';
import { installConnectionCap } from './connection-cap.ts';
import { Problem, retryLater } from './problem.ts';
import { validatorCompiler } from './validation.ts';
import { sharedSerializers } from './serializers.ts';
import { requestForLog } from './logged-url.ts';
import { lazyChildLogger } from './request-logger.ts';
import { errorResponses, ProblemSchema } from './schemas/common.ts';
import { consoleRouteGroups, routeGroups } from './routes.ts';
import { documentRoles } from './openapi-roles.ts';
import { completeResponses } from './openapi-responses.ts';
import { CSRF_HEADER } from './auth/session.ts';
import { Type } from 'typebox';

/** The query string of a GET that takes none (see the onRoute hook below). */
const NO_QUERY = Type.Object({}, { additionalProperties: false });

/**
 * Headers that carry credentials, masked wherever a log line holds them: as `headers` of the line
 * itself or of any member of it (`req`, `res`, `request`, `err`…). Fastify's own request and reply
 * serializers log no headers; this is the second line, for a line that logs a headers object.
 */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-csrf-token'];
export const REDACT = CREDENTIAL_HEADERS.flatMap((h) => [`headers["${h}"]`, `*.headers["${h}"]`]);

/** Logger options with credential headers masked and request lines through `requestForLog`, unless they say otherwise. */
function withGavelLogging(logger: NonNullable<FastifyServerOptions['logger']>, routeTable: RouteTable): FastifyServerOptions['logger'] {
  if (typeof logger !== 'object') return logger;
  const req = (request: Parameters<typeof requestForLog>[0]) => requestForLog(request, routeTable.paths());
  return { redact: REDACT, ...logger, serializers: { req, ...logger.serializers } };
}

export interface BuildOptions {
  logger?: FastifyServerOptions['logger'];
}

export async function buildApp(deps: AppDeps, options: BuildOptions = {}): Promise<FastifyInstance> {
  // Filled as routes are added (the onRoute hook below); the request log reads unrouted paths against it.
  const routeTable = new RouteTable();
  const app = Fastify<Server>({
    logger: withGavelLogging(options.logger ?? { level: deps.config.logLevel }, routeTable),
    bodyLimit: deps.config.bodyLimitBytes,
    // Fastify turns Node's request timeout off (0), so a body sent slowly, or stalled one byte
    // short, held its connection and its buffered bytes (up to 8 MiB on the policy routes, before
    // any authentication) for ever. A whole request must now arrive within requestTimeoutMs
    // (408 request_timeout, http/client-errors.ts); Node checks every quarter of it, at most every 5 s.
    // The headers get the same time: Node swaps the two when headersTimeout (60 s by default) is the
    // longer, which would make 60 s the limit for the whole request.
    requestTimeout: deps.config.requestTimeoutMs,
    http: {
      // Given here too: Node checks headersTimeout against the requestTimeout it is constructed
      // with (300 s unless given), so a longer configured timeout would stop the start with a RangeError.
      requestTimeout: deps.config.requestTimeoutMs,
      headersTimeout: deps.config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(5_000, Math.max(50, Math.floor(deps.config.requestTimeoutMs / 4))),
      // Node's own refusal of an HTTP/1.1 request without Host is a bare 400; http/message-checks.ts answers it.
      requireHostHeader: false,
    },
    genReqId: () => newId('req'),
    // request.ip is the client before the configured proxies, and the peer itself without them.
    trustProxy: deps.config.trustProxy ?? false,
    // Each request's logger is made when it first logs at an enabled level (http/request-logger.ts).
    childLoggerFactory: lazyChildLogger,
    // Requests that arrive while closing get a problem+json 503 from the hook below instead.
    return503OnClosing: false,
    // Path parameters carry DIDs of up to 512 characters (percent-encoded in the URL); the
    // router's default limit of 100 would answer a valid agent DID with 414.
    routerOptions: { maxParamLength: 2048 },
    // One response serializer per distinct schema, not per route and status (http/serializers.ts).
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers() } },
    // Errors the router raises before any route or hook runs (a malformed percent-escape, an
    // over-long parameter) are problems like every other refusal, with a request id.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      const problem = error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new Problem(414, 'uri_too_long', 'a path parameter is longer than this service accepts')
        : new Problem(400, 'bad_url', 'the URL is not valid (a malformed percent-escape?)');
      return sendProblem(reply, request, problem);
    },
    // Requests that are not well-formed HTTP, refused by Node's parser before any route (http/client-errors.ts).
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Repeated or missing headers, Expect and CONNECT, answered before routing (http/message-checks.ts).
  installMessageChecks(app, routeTable);
  installConnectionCap(app, deps.config.maxConnections);
  app.setValidatorCompiler(validatorCompiler);

  app.decorate('gavel', deps);
  app.decorate('draining', false);
  app.decorateRequest('auth', null);
  // A property of every request rather than a WeakSet of some: a WeakSet entry per request is work for every scavenge.
  app.decorateRequest('authFromCache', false);
  let closing = false;
  app.addHook('preClose', async () => { closing = true; });
  // Callback style, not async: it runs on every request, and a promise per request shows up at the maximum.
  // Every answer is no-store and nosniff, the machine plane's too: what either plane answers is a
  // caller's view of the project (members, SoD, permits, audit events), for no cache to keep and no
  // browser to read as anything but the type it is sent as. A route may still name its own cache-control.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
    if (!closing) { done(); return; }
    reply.header('connection', 'close');
    sendProblem(reply, request, retryLater(503, 'shutting_down', 'the service is shutting down; retry against another instance', 1));
  });

  const operationIds = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (route.url === '*' || route.url.startsWith('/documentation')) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!route.schema?.response && !methods.every((m) => m === 'HEAD')) {
      throw new Error(`route ${methods.join(',')} ${route.url} has no response schema; every route needs one`);
    }
    // Every operation is named for client generators, each once (HEAD copies share their GET's schema).
    if (!methods.every((m) => m === 'HEAD')) {
      const id = (route.schema as { operationId?: string }).operationId;
      if (!id || operationIds.has(id)) throw new Error(`route ${methods.join(',')} ${route.url} has ${id ? `the operationId ${id} of another` : 'no operationId'}; every route needs one of its own`);
      operationIds.add(id);
    }
    // The OpenAPI document states how each route authenticates, from the plane it belongs to.
    if (route.schema && !route.schema.security) {
      const publicRoute = ['/v1/console/login', '/v1/console/register'].includes(route.url) || !route.url.startsWith('/v1/');
      if (!publicRoute) route.schema.security = [route.url.startsWith('/v1/console/') ? { session: [] } : { apiKey: [] }];
    }
    // A console mutation needs the CSRF header too (consoleAuth): both schemes in one requirement,
    // so a client generated from the document sends it. HEAD copies of GETs pass here as well.
    if (route.schema?.security && route.url.startsWith('/v1/console/') && methods.some((m) => m !== 'GET' && m !== 'HEAD')) {
      route.schema = { ...route.schema, security: route.schema.security.map((r) => ('session' in r ? { ...r, csrf: [] } : r)) };
    }
    // A route of the API that takes no query parameters refuses any (400 unknown_field), as the list
    // routes refuse the ones they do not know: a misspelt filter must not answer as if obeyed, nor a
    // secret sent in the URL (`/v1/console/login?password=…`) be taken, and logged with the URL.
    // HEAD routes are Fastify's copies of the GETs, made before this hook sees them. POST
    // /v1/authorize, the hot path, refuses them in its handler instead (machine/authorize.ts).
    if (route.schema && !route.schema.querystring && route.url.startsWith('/v1/') && route.url !== '/v1/authorize') {
      const response = route.schema.response as Record<number, unknown>;
      route.schema = { ...route.schema, querystring: NO_QUERY, response: { [400]: errorResponses({ auth: 'none' }, { 400: ['invalid_request'] })[400], ...response } };
    }
    routeTable.onRoute(route);
  });

  app.addHook('onRoute', documentRoles);
  installErrorHandling(app, routeTable);
  // Bodies are JSON only: Fastify's built-in text/plain parser would let a string reach validation
  // (400) where the right answer is 415. JSON is read as UTF-8 bytes, checked (http/body.ts).
  app.removeContentTypeParser('text/plain');
  installJsonBodyParser(app);
  app.addSchema(ProblemSchema);

  await app.register(swagger, {
    // Response descriptions and headers (x-request-id, retry-after), in the document only.
    transformObject: completeResponses,
    // Shared schemas are published under their own $id (components.schemas.Problem), not def-0.
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Gavel',
        version: '1',
        description: 'Decides what AI agents may do, asks a person where a person must decide, executes allowed actions once, and proves what was decided.\n\n'
          + 'Every error is application/problem+json (RFC 9457) with a stable `code`; each operation lists the statuses and codes it gives. '
          // Answers of the router and of Node's HTTP parser (frameworkErrors and the not-found handler here, http/client-errors.ts): no operation's.
          + 'Before any operation is reached, a request may also get 404 `not_found` (no such route; an empty path segment, as a trailing slash makes, names none), 405 `method_not_allowed` (with `allow`; a path is its most specific route\'s for every method, a static segment before a parameter, so `GET …/agents/freeze` is 405, not a look-up of an agent named freeze), '
          + '414 `uri_too_long` (a path parameter longer than the service accepts) or 400 `bad_url` (a malformed percent-escape, or a fragment `#` sent in the request target); '
          + 'one that is not well-formed HTTP (an HTTP/1.1 request without Host among them) gets 400 `malformed_request`, 408 `request_timeout` or 431 `headers_too_large`, and the connection is closed. '
          + `A connection with more than ${MAX_PIPELINED_REQUESTS} pipelined requests waiting behind an unread answer is closed without answering them. `
          + 'A connection past the number served at once (GAVEL_MAX_CONNECTIONS) is closed unanswered, and connections idle between requests are then closed to make room. '
          + 'Every GET operation also answers HEAD: the same status and headers, no body (HEAD is not listed as an operation of its own). '
          + 'Once the service stops (after the drain GAVEL_SHUTDOWN_DRAIN_MS sets, none by default, during which every request is still served and only GET /readyz answers 503 `shutting_down`) it accepts no new connection, and a request sent on a connection kept alive gets 503 `shutting_down` with `retry-after` and the connection closed (retry against another instance); requests already in flight are answered. '
          + 'A request that repeats Host, Authorization or Content-Type gets 400 `duplicate_header` before any authentication; '
          + 'an `Expect` other than 100-continue gets 417 `expectation_failed`; a Transfer-Encoding other than chunked alone (gzip, chunked, say) 501 `not_implemented`, and CONNECT 501 `not_implemented` (the connection is closed after either); '
          + 'a request line without a version (HTTP/0.9) gets 400 `malformed_request` and one naming HTTP/2.0 505 `http_version_not_supported`, and the connection is closed.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key minted in the console (gvl_…)' },
          session: { type: 'apiKey', in: 'cookie', name: 'gavel_session', description: 'Session cookie from POST /v1/console/login (__Host-gavel_session over TLS); every mutation also needs the x-csrf-token header' },
          csrf: { type: 'apiKey', in: 'header', name: CSRF_HEADER, description: 'CSRF token of the session (csrf_token of POST /v1/console/login, also in the gavel_csrf cookie, which must be sent with it); required with the session cookie on every console mutation' },
        },
      },
    },
  });

  for (const group of routeGroups) await app.register(group);
  // Only the console plane reads or sets cookies: the cookie plugin's hooks (a parse on every
  // request, a hook on every reply) stay inside its context, off the machine plane's hot path.
  await app.register(async (consolePlane) => {
    await consolePlane.register(cookie);
    for (const group of consoleRouteGroups) await consolePlane.register(group);
  });
  return app;
}
