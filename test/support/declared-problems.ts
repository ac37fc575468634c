// Every problem a test service sends from a route is checked against the OpenAPI document when the
// service stops (test/support/service.ts): a status or code its operation does not declare fails the
// test file that provoked it, so the whole suite keeps the document's error responses honest.
// Answers given before any route matched (no such route, 405, bad_url) are not an operation's.
import type { FastifyInstance } from 'fastify';

export interface SentProblem { method: string; route: string; status: number; code: string }

/** The codes a response description lists: "(code x)" or "(codes x, y)". */
export const codesIn = (description: string): string[] => /\(codes? ([a-z_, ]+)\)$/.exec(description)?.[1]!.split(', ') ?? [];

/** Records every problem+json answer of a route. Install it before the app is ready. */
export function recordProblems(app: FastifyInstance): SentProblem[] {
  const sent: SentProblem[] = [];
  app.addHook('onSend', (request, reply, payload, done) => {
    const route = request.routeOptions.url;
    if (route !== undefined && typeof payload === 'string' && String(reply.getHeader('content-type')).startsWith('application/problem+json')) {
      sent.push({ method: request.method, route, status: reply.statusCode, code: (JSON.parse(payload) as { code: string }).code });
    }
    done(null, payload);
  });
  return sent;
}

/** The problems sent that their operation in `doc` does not declare, as "METHOD /path status code". */
export function undeclared(doc: object, sent: readonly SentProblem[]): string[] {
  const { paths } = doc as { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> };
  const out = new Set<string>();
  for (const p of sent) {
    const path = p.route.replace(/:([A-Za-z_]+)/g, '{$1}');
    // A HEAD route answers as its GET (Fastify's exposeHeadRoutes), which the document describes.
    const op = paths[path]?.[p.method === 'HEAD' ? 'get' : p.method.toLowerCase()];
    const response = op?.responses[String(p.status)];
    if (!response || !codesIn(response.description).includes(p.code)) out.add(`${p.method} ${path} ${p.status} ${p.code}`);
  }
  return [...out];
}
