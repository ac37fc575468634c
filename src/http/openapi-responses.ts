// Completes the responses of the OpenAPI document (the document only: routes, their schemas and
// serializers are untouched). A success response without a description of its own is described by
// its status and its operation's summary (@fastify/swagger would say "Default Response"); every
// response declares x-request-id, which every answer carries (http/app.ts, its onRequest hook), and
// one whose codes are sent with retry-after declares that too.
import { STATUS_CODES } from 'node:http';
import type { SwaggerTransformObject } from '@fastify/swagger';
import { codesIn } from './schemas/common.ts';

/**
 * Codes answered with retry-after: the service closing (http/app.ts, /readyz), the database out of
 * reach or its disk full (http/errors.ts), a decision that kept meeting changed access rules
 * (machine/authorize.ts), the sign-in and registration throttles (console/auth.ts) and a proof not
 * ready yet (services/auditlog/proofs.ts). Tests check every one sent against the document.
 */
export const RETRY_AFTER_CODES: readonly string[] = ['shutting_down', 'database_unavailable', 'storage_full', 'busy', 'too_many_attempts', 'proof_not_ready'];

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
interface Operation { summary?: string; responses: Record<string, Response> }
interface Document { paths: Record<string, Record<string, Operation>>; components: Record<string, unknown> }

/** @fastify/swagger's transformObject: runs once, when the document is first built. */
export const completeResponses: SwaggerTransformObject = (built) => {
  if (!('openapiObject' in built)) return built.swaggerObject;
  const doc = built.openapiObject as unknown as Document;
  doc.components.headers = HEADERS;
  for (const item of Object.values(doc.paths)) {
    for (const o of Object.values(item)) {
      for (const [status, res] of Object.entries(o.responses)) {
        if (res.description === 'Default Response') res.description = `${STATUS_CODES[status] ?? status}: ${o.summary ?? ''}`;
        const retry = codesIn(res.description).some((c) => RETRY_AFTER_CODES.includes(c));
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
