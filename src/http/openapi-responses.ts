// Completes the responses of the OpenAPI document (the document only: routes, their schemas and
// serializers are untouched). A success response without a description of its own is described by
// its status and its operation's summary (@fastify/swagger would say "Default Response"); every
// response declares x-request-id, which every answer carries (http/app.ts, its onRequest hook), and
// one that lists a code sent with retry-after (RETRY_AFTER_CODES, where problem.ts's `retryLater`
// takes its codes from) declares that too.
import { STATUS_CODES } from 'node:http';
import type { SwaggerTransformObject } from '@fastify/swagger';
import { isRetryAfterCode, RETRY_AFTER_CODES } from './problem.ts';
import { codesIn, PAGE_CURSOR_CONTENT } from './schemas/common.ts';

const HEADERS = {
  RequestId: {
    description: 'The id of this request (as the service logged it); a problem repeats it as request_id',
    required: true,
    schema: { type: 'string', pattern: '^req_[0-9a-z]{26}$' },
  },
  RetryAfter: {
    description: `Seconds to wait before retrying; sent with ${RETRY_AFTER_CODES.join(', ')}`,
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
};

interface Response { description: string; headers?: Record<string, unknown> }
interface Parameter { in: string; schema?: { contentMediaType?: unknown; contentEncoding?: unknown } }
interface Operation { summary?: string; parameters?: Parameter[]; responses: Record<string, Response> }
interface Document { paths: Record<string, Record<string, Operation>>; components: Record<string, unknown> }

/** @fastify/swagger's transformObject: runs once, when the document is first built. */
export const completeResponses: SwaggerTransformObject = (built) => {
  if (!('openapiObject' in built)) return built.swaggerObject;
  const doc = built.openapiObject as unknown as Document;
  doc.components.headers = HEADERS;
  for (const item of Object.values(doc.paths)) {
    for (const o of Object.values(item)) {
      // @fastify/swagger keeps a contentEncoding only as format binary or byte and drops base64url,
      // so the page cursor (base64url of JSON) would read as JSON text: put it back.
      for (const p of o.parameters ?? []) {
        const schema = p.schema;
        if (p.in === 'query' && schema?.contentMediaType === PAGE_CURSOR_CONTENT.contentMediaType && schema.contentEncoding === undefined) schema.contentEncoding = PAGE_CURSOR_CONTENT.contentEncoding;
      }
      for (const [status, res] of Object.entries(o.responses)) {
        if (res.description === 'Default Response') res.description = `${STATUS_CODES[status] ?? status}: ${o.summary ?? ''}`;
        const retry = codesIn(res.description).some(isRetryAfterCode);
        res.headers = {
          ...res.headers,
          'x-request-id': { $ref: '#/components/headers/RequestId' },
          ...(retry ? { 'retry-after': { $ref: '#/components/headers/RetryAfter' } } : {}),
        };
      }
    }
  }
  return built.openapiObject;
};
