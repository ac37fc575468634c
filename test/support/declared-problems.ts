// Every problem a test service sends from a route is checked against the OpenAPI document when the
// service stops (test/support/service.ts): a status or code its operation does not declare fails the
// test file that provoked it, so the whole suite keeps the document's error responses honest. Every
// other answer's status is checked too (a 201 the document calls 200 would mislead a client as much),
// and a retry-after sent where the response does not declare it. Every JSON body is validated against
// the schema its operation declares for its status (test/support/answer-schemas.ts).
// Answers given before any route matched (no such route, 405, bad_url) are not an operation's.
import type { FastifyInstance } from 'fastify';
import { codesIn } from '../../src/http/schemas/common.ts';
import { answerSchemas } from './answer-schemas.ts';

export { codesIn };

/** retryAfter: the answer carried retry-after, which its response must then declare. */
export interface SentProblem { method: string; route: string; status: number; code: string; retryAfter?: boolean }
/** A route's answer that is not a problem: its status must be declared, with no code to name. */
export type SentAnswer = Omit<SentProblem, 'code' | 'retryAfter'>;


/**
 * Records every answer of a route: problem+json ones with their code, the others by status; and, as
 * "METHOD /path status: what is wrong", every body its response schema does not admit. Install it before the app is ready.
 */
export function recordProblems(app: FastifyInstance): { problems: SentProblem[]; others: SentAnswer[]; mismatches: Set<string> } {
  const problems: SentProblem[] = [];
  const others: SentAnswer[] = [];
  const mismatches = new Set<string>();
  const seen = new Set<string>(); // one entry per route and status: a test may send thousands of successes
  app.addHook('onSend', (request, reply, payload, done) => {
    const route = request.routeOptions.url;
    if (route === undefined) { done(null, payload); return; }
    const answer = { method: request.method, route, status: reply.statusCode };
    const type = String(reply.getHeader('content-type')).split(';')[0]!;
    const body = type.endsWith('json') && (typeof payload === 'string' || Buffer.isBuffer(payload)) && payload.length > 0 ? JSON.parse(String(payload)) as unknown : undefined;
    // A HEAD answer's body is its GET's (validated there), dropped on the way out.
    if (body !== undefined && request.method !== 'HEAD') {
      const path = documentPath(route);
      const wrong = answerSchemas(app.swagger()).mismatch(request.method, path, reply.statusCode, type, body);
      if (wrong !== undefined) mismatches.add(`${request.method} ${path} ${reply.statusCode}: ${wrong}`);
    }
    if (type === 'application/problem+json' && body !== undefined) {
      problems.push({ ...answer, code: (body as { code: string }).code, retryAfter: reply.hasHeader('retry-after') });
    } else if (!seen.has(`${answer.method} ${route} ${answer.status}`)) {
      seen.add(`${answer.method} ${route} ${answer.status}`);
      others.push(answer);
    }
    done(null, payload);
  });
  return { problems, others, mismatches };
}

/**
 * recordProblems on `app`, and `failures()`: what its routes sent that the document does not declare or
 * admit, as one message, or undefined (call it while the app is open: the document is read off it).
 */
export function answerChecks(app: FastifyInstance): { problems: SentProblem[]; failures(): string | undefined } {
  const { problems, others, mismatches } = recordProblems(app);
  return {
    problems,
    failures() {
      // An app that served nothing may never have been made ready, and swagger() needs it ready.
      const sent = [...problems, ...others];
      const missing = sent.length > 0 ? undeclared(app.swagger(), sent) : [];
      const out = [
        ...(missing.length > 0 ? [`answers sent but not declared in /openapi.json: ${missing.join('; ')}`] : []),
        ...(mismatches.size > 0 ? [`answers their /openapi.json response schema does not admit: ${[...mismatches].join('; ')}`] : []),
      ];
      return out.length > 0 ? out.join('\n') : undefined;
    },
  };
}

/** A Fastify route's path as the document writes it (`:id` → `{id}`). */
const documentPath = (route: string) => route.replace(/:([A-Za-z_]+)/g, '{$1}');

/**
 * The answers sent that their operation in `doc` does not declare, as "METHOD /path status code" (no
 * code for a non-problem), with " retry-after" when the response does not declare the header it was sent with.
 */
export function undeclared(doc: object, sent: readonly (SentProblem | SentAnswer)[]): string[] {
  const { paths } = doc as { paths: Record<string, Record<string, { responses: Record<string, { description: string; headers?: Record<string, unknown> }> }>> };
  const out = new Set<string>();
  for (const p of sent) {
    const path = documentPath(p.route);
    // A HEAD route answers as its GET (Fastify's exposeHeadRoutes), which the document describes.
    const op = paths[path]?.[p.method === 'HEAD' ? 'get' : p.method.toLowerCase()];
    const response = op?.responses[String(p.status)];
    const code = 'code' in p ? p.code : undefined;
    const label = `${p.method} ${path} ${p.status}${code === undefined ? '' : ` ${code}`}`;
    if (!response || (code !== undefined && !codesIn(response.description).includes(code))) out.add(label);
    else if ('retryAfter' in p && p.retryAfter && !response.headers?.['retry-after']) out.add(`${label} retry-after`);
  }
  return [...out];
}
