// Every problem a test service sends from a route is checked against the OpenAPI document when the
// service stops (test/support/service.ts): a status or code its operation does not declare fails the
// test file that provoked it, so the whole suite keeps the document's error responses honest. Every
// other answer's status is checked too (a 201 the document calls 200 would mislead a client as much),
// and a retry-after sent where the response does not declare it.
// Answers given before any route matched (no such route, 405, bad_url) are not an operation's.
import type { FastifyInstance } from 'fastify';
import { codesIn } from '../../src/http/schemas/common.ts';

export { codesIn };

/** retryAfter: the answer carried retry-after, which its response must then declare. */
export interface SentProblem { method: string; route: string; status: number; code: string; retryAfter?: boolean }
/** A route's answer that is not a problem: its status must be declared, with no code to name. */
export type SentAnswer = Omit<SentProblem, 'code' | 'retryAfter'>;


/** Records every answer of a route: problem+json ones with their code, the others by status. Install it before the app is ready. */
export function recordProblems(app: FastifyInstance): { problems: SentProblem[]; others: SentAnswer[] } {
  const problems: SentProblem[] = [];
  const others: SentAnswer[] = [];
  const seen = new Set<string>(); // one entry per route and status: a test may send thousands of successes
  app.addHook('onSend', (request, reply, payload, done) => {
    const route = request.routeOptions.url;
    if (route === undefined) { done(null, payload); return; }
    const answer = { method: request.method, route, status: reply.statusCode };
    if (typeof payload === 'string' && String(reply.getHeader('content-type')).startsWith('application/problem+json')) {
      problems.push({ ...answer, code: (JSON.parse(payload) as { code: string }).code, retryAfter: reply.hasHeader('retry-after') });
    } else if (!seen.has(`${answer.method} ${route} ${answer.status}`)) {
      seen.add(`${answer.method} ${route} ${answer.status}`);
      others.push(answer);
    }
    done(null, payload);
  });
  return { problems, others };
}

/**
 * The answers sent that their operation in `doc` does not declare, as "METHOD /path status code" (no
 * code for a non-problem), with " retry-after" when the response does not declare the header it was sent with.
 */
export function undeclared(doc: object, sent: readonly (SentProblem | SentAnswer)[]): string[] {
  const { paths } = doc as { paths: Record<string, Record<string, { responses: Record<string, { description: string; headers?: Record<string, unknown> }> }>> };
  const out = new Set<string>();
  for (const p of sent) {
    const path = p.route.replace(/:([A-Za-z_]+)/g, '{$1}');
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
