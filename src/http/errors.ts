// Maps every failure to RFC 9457 problem+json. Bad input is always a 4xx with a precise code;
// only a fault of the service itself is a 500, and its details stay in the log.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { escapePointer, invalidRequest, listedErrors, Problem, problemBody, retryLater, type FieldError } from './problem.ts';
import { databaseUnreachable, lockWaitTimedOut } from '../store/unreachable.ts';
import { outOfSpace } from '../store/space.ts';
import { bodyUnread } from './message-checks.ts';
import { repeatedFailureLog } from './repeated-failure-log.ts';
import { routedPath, type RouteTable } from './route-table.ts';
import { nearRouteHint } from './near-route.ts';

const KEYWORD_CODES: Record<string, string> = {
  required: 'required', additionalProperties: 'unknown_field', type: 'wrong_type', maxLength: 'too_long',
  minLength: 'too_short', pattern: 'bad_format', format: 'bad_format', enum: 'not_allowed', const: 'not_allowed',
  minimum: 'too_small', maximum: 'too_large', exclusiveMinimum: 'too_small', exclusiveMaximum: 'too_large',
  maxItems: 'too_many', minItems: 'too_few', uniqueItems: 'duplicate', anyOf: 'no_alternative_matched',
  oneOf: 'no_alternative_matched', multipleOf: 'wrong_type', maxProperties: 'too_many', minProperties: 'too_few',
  wellFormed: 'invalid_unicode',
};

interface AjvError { keyword: string; instancePath: string; params: Record<string, unknown>; message?: string; schema?: unknown; parentSchema?: { description?: unknown }; data?: unknown }

/** The values an `anyOf` of constants allows (a union of literals), or undefined for any other anyOf. */
function allowedValues(e: AjvError): unknown[] | undefined {
  if (e.keyword !== 'anyOf' || !Array.isArray(e.schema)) return undefined;
  const branches = e.schema as { const?: unknown }[];
  return branches.every((b) => b !== null && typeof b === 'object' && 'const' in b) ? branches.map((b) => b.const) : undefined;
}

/** `: <the field's description>`, or nothing when it has none. */
function describedAs(e: AjvError): string {
  const description = e.parentSchema?.description;
  return typeof description === 'string' ? `: ${description}` : '';
}

/** A pattern's or format's own regular expression says little to a caller; the field's description says what is wanted. */
function formatMessage(e: AjvError): string | undefined {
  const description = e.parentSchema?.description;
  return typeof description === 'string' ? `does not have the required form: ${description}` : undefined;
}

/**
 * Ajv's "must be object" for a whole body says nothing of the usual cause: no body at all (a console
 * mutation sent as `curl -X POST` without `-d '{}'`: docs/getting-started.md, "Others"). Fastify
 * validates a missing body as null, so the two are told apart no further than this.
 */
function wholeBodyNotObject(body: unknown): string {
  return body === null || body === undefined
    ? 'is missing (or null): send a JSON object with content-type: application/json ({} when there is nothing to say)'
    : `must be a JSON object, not ${Array.isArray(body) ? 'an array' : `a ${typeof body}`}`;
}

export function fieldErrors(errors: AjvError[], context: string): FieldError[] {
  const where = (context === 'querystring' ? 'query' : context) as FieldError['in'];
  const out: FieldError[] = [];
  const seen = new Set<string>();
  // A value that breaks its pattern or format and is also too short is reported once, by its form:
  // the length bound is implied by the pattern ("x" is not "fewer than 12 characters" but not a resource URI).
  const malformed = new Set(errors.filter((e) => e.keyword === 'pattern' || e.keyword === 'format').map((e) => e.instancePath));
  // A union of literals fails once per literal ("must be equal to constant") and once as a whole:
  // reported once, naming the values it allows.
  const enumerated = new Set(errors.filter((e) => allowedValues(e) !== undefined).map((e) => e.instancePath));
  // Every query value is text, so one of another type is a parameter given more than once (an
  // array): said once as that, not as "must be string" or a list of allowed values it never broke.
  const repeated = new Set(where === 'query' ? errors.filter((e) => e.keyword === 'type').map((e) => e.instancePath) : []);
  for (const e of errors) {
    if (e.keyword === 'minLength' && malformed.has(e.instancePath)) continue;
    if (e.keyword === 'const' && enumerated.has(e.instancePath)) continue;
    if (repeated.has(e.instancePath) && e.keyword !== 'type') continue;
    // anyOf/oneOf report every branch; the branch errors are noise next to the summary.
    if (e.keyword === 'if') continue;
    let pointer = e.instancePath;
    if (e.keyword === 'required') pointer += '/' + escapePointer(String(e.params.missingProperty));
    if (e.keyword === 'additionalProperties') pointer += '/' + escapePointer(String(e.params.additionalProperty));
    const allowed = allowedValues(e);
    const code = allowed ? 'not_allowed' : KEYWORD_CODES[e.keyword] ?? 'invalid';
    let message = allowed ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}` : e.message ?? 'is not valid';
    if (e.keyword === 'required') message = 'is required';
    if (e.keyword === 'additionalProperties') message = 'is not a known field';
    if (e.keyword === 'pattern' || e.keyword === 'format') message = formatMessage(e) ?? message;
    if (repeated.has(e.instancePath)) message = 'is given more than once; give it once';
    if (where === 'body' && pointer === '' && e.keyword === 'type' && e.params.type === 'object') message = wholeBodyNotObject(e.data);
    // A fraction where a whole number is wanted: for money, most likely major units (30.5 meant as
    // 30.50 EUR); the field's description says which unit it counts.
    if (e.keyword === 'type' && e.params.type === 'integer' && typeof e.data === 'number') message = `must be a whole number, not ${e.data}${describedAs(e)}`;
    const key = `${pointer}|${code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ pointer, code, message, ...(where && where !== 'body' ? { in: where } : {}) });
  }
  return out;
}

/**
 * On a route with `attachValidation`, the located errors of a request that broke its schema (none
 * when it did not), for a handler that adds its own checks' errors to one answer.
 */
export function attachedErrors(request: FastifyRequest): FieldError[] {
  const failed = request.validationError as (Error & { validation?: AjvError[]; validationContext?: string }) | undefined;
  return failed?.validation ? fieldErrors(failed.validation, failed.validationContext ?? 'body') : [];
}

/**
 * On a route with `attachValidation`: refuses (400 invalid_request, or `refusal`'s answer) a request
 * that broke its body schema or the route's own checks, every error at once (decision 0001). `own`
 * checks the body's members the schema let through (`failed` says whether the schema found one at
 * or under a pointer); a body that is no object, or a request whose path or query failed, is
 * refused on the schema's errors alone. An own error at a pointer the schema reported is the
 * schema's; the schema's `required` for a member an own error names more precisely is that error.
 */
export function refuseBody(
  request: FastifyRequest,
  own: (body: Record<string, unknown>, failed: (pointer: string) => boolean) => FieldError[],
  refusal: (errors: FieldError[]) => Problem = invalidRequest,
): void {
  const schema = attachedErrors(request);
  const body = request.body;
  if (schema.length > 0 && (typeof body !== 'object' || body === null || Array.isArray(body) || schema.some((e) => e.in !== undefined))) throw invalidRequest(schema);
  const failed = (pointer: string) => schema.some((e) => e.pointer === pointer || e.pointer.startsWith(`${pointer}/`));
  const mine = own(body as Record<string, unknown>, failed).filter((o) => !schema.some((e) => e.pointer === o.pointer));
  const errors = [...schema.filter((e) => !(e.code === 'required' && mine.some((o) => o.pointer.startsWith(`${e.pointer}/`)))), ...mine];
  if (errors.length > 0) throw refusal(errors);
}

/** Fastify's names for the parts of a request a schema checks, as a detail says them. */
const PARTS: Record<string, string> = { body: 'the request body is', querystring: 'the query string is', params: 'the path parameters are', headers: 'the request headers are' };

export function toProblem(error: FastifyError & { validation?: AjvError[]; validationContext?: string }): Problem {
  if (error instanceof Problem) return error;
  if (databaseUnreachable(error)) {
    return retryLater(503, 'database_unavailable', 'the database could not be reached or dropped the connection; retry', 1);
  }
  if (lockWaitTimedOut(error)) {
    return retryLater(503, 'busy', 'a lock another session of the database holds did not come free in time: nothing was changed; retry', 1);
  }
  if (outOfSpace(error)) {
    return retryLater(503, 'storage_full', 'the database\'s disk is full: what this request had to record was not recorded; retry once space is freed', 5);
  }
  if (error.validation) {
    return new Problem(400, 'invalid_request', `${PARTS[error.validationContext ?? 'body'] ?? 'the request is'} not valid; see errors`, {
      // Capped as every invalid_request answer is: a body or query of thousands of unknown members
      // would otherwise be answered with an error for each, many times its own size.
      errors: listedErrors(fieldErrors(error.validation, error.validationContext ?? 'body')),
    });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new Problem(415, 'unsupported_media_type', 'send the body as application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new Problem(413, 'payload_too_large', 'the request body is larger than this service accepts');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new Problem(400, 'malformed_json', 'the body is declared as JSON but is empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new Problem(400, 'malformed_json', 'the body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new Problem(400, 'invalid_content_length', 'the content-length header does not match the body');
  }
  // Request bodies are parsed by http/body.ts, which throws its own problems, and by Fastify's parser
  // (the codes above, or a 400 naming JSON). A bare SyntaxError is the service failing to read JSON
  // it stored or made itself: its fault, a logged 500, not the client's malformed_json (decision 0001).
  if (error.statusCode === 400 && /JSON/i.test(error.message)) {
    return new Problem(400, 'malformed_json', 'the body is not valid JSON');
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new Problem(error.statusCode, 'bad_request', error.message);
  }
  return new Problem(500, 'internal_error', 'the service failed to handle this request; it has been logged');
}

export function sendProblem(reply: FastifyReply, request: FastifyRequest, problem: Problem): FastifyReply {
  if (problem.headers) reply.headers(problem.headers);
  // Refused before its body was read (a 415, say): Node would otherwise keep reading and dropping
  // the rest of that body, however long, to keep the connection, and a body that never ends held
  // the connection for ever. Nothing after it on this connection is worth the wait. A request
  // without a body (a GET to no route) keeps its connection.
  if (bodyUnread(request.raw)) reply.header('connection', 'close');
  return reply.code(problem.status).type('application/problem+json').send(problemBody(problem, String(request.id)));
}

export function installErrorHandling(app: FastifyInstance, routeTable: Pick<RouteTable, 'of'>): void {
  // An outage refuses every request and readiness probe while it lasts: logged once a minute, not for each.
  const unreachable = repeatedFailureLog(app.log, 'the database is unreachable: requests are refused (503 database_unavailable) and /readyz answers 503 (logged again at most once a minute while it lasts)', () => 'unreachable');
  // …and its end once: while it lasts the database is asked every second whether it answers again,
  // so that the line comes whether or not requests or probes arrive.
  let probe: NodeJS.Timeout | undefined;
  const watchForRecovery = () => {
    if (probe) return;
    let asking = false;
    probe = setInterval(() => {
      if (asking) return;
      asking = true;
      app.gavel.store.ping().then((answers) => {
        if (!answers || !probe) return;
        clearInterval(probe);
        probe = undefined;
        unreachable.recovered('the database answers again: requests and /readyz are served');
      }, () => {}).finally(() => { asking = false; });
    }, 1_000).unref();
  };
  app.addHook('onClose', async () => { clearInterval(probe); probe = undefined; });
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = toProblem(error);
    // A full disk is logged once for all the requests it refuses (store/space.ts), readyz told.
    if (problem.code === 'storage_full') app.gavel.store.space.refused(error);
    else if (problem.code === 'database_unavailable' || problem.code === 'not_ready') { unreachable(error); watchForRecovery(); }
    else if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, request, problem);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    // The methods of the route the path belongs to: a static one's alone, though a parametric
    // sibling's pattern matches it too (`DELETE …/agents/freeze` is not allowed GET).
    const methods = new Set(routeTable.of(routedPath(request.url))?.methods);
    // Every GET answers HEAD too (Fastify's copy of it), so Allow names it (RFC 9110 §10.2.1).
    if (methods.has('GET')) methods.add('HEAD');
    const allowed = [...methods];
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendProblem(reply, request, new Problem(405, 'method_not_allowed', `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`));
    }
    return sendProblem(reply, request, new Problem(404, 'not_found', `no route ${request.method} ${path}${nearRouteHint(routeTable, request.method, routedPath(request.url))}`));
  });
}
