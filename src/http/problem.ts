// RFC 9457 problem details with a `code` member carrying the spec's error code (DESIGN.md).
import { STATUS_CODES } from 'node:http';
export interface FieldError {
  /** JSON Pointer (RFC 6901) into the request part named by `in` (the body unless stated). */
  pointer: string;
  code: string;
  message: string;
  in?: 'body' | 'query' | 'params' | 'headers';
}

/** A member name as a JSON Pointer (RFC 6901) reference token. */
export { escapePointer } from '../lib/json-pointer.ts';

/**
 * The codes sent with retry-after, and the only ones: `retryLater` is how a problem carries the
 * header (Problem's own `headers` refuses it), and the OpenAPI document declares it on every
 * response that lists one of these codes (openapi-responses.ts). Sent by the service closing
 * (http/app.ts, /readyz), the database out of reach or its disk full (http/errors.ts), a decision
 * that kept meeting changed access rules (machine/authorize.ts), the sign-in and registration
 * throttles (console/auth.ts) and a proof not ready yet (services/auditlog/proofs.ts).
 */
export const RETRY_AFTER_CODES = ['shutting_down', 'database_unavailable', 'storage_full', 'busy', 'too_many_attempts', 'proof_not_ready'] as const;
export type RetryAfterCode = (typeof RETRY_AFTER_CODES)[number];
export const isRetryAfterCode = (code: string): code is RetryAfterCode => (RETRY_AFTER_CODES as readonly string[]).includes(code);

/** Headers a problem sends; retry-after only through `retryLater`, so that its code is declared with it. */
type ProblemHeaders = Record<string, string> & { 'retry-after'?: never };

export class Problem extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly errors: FieldError[] | undefined;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;
  constructor(status: number, code: string, detail: string, options: { errors?: FieldError[]; extra?: Record<string, unknown>; headers?: ProblemHeaders } = {}) {
    super(detail);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.errors = options.errors;
    this.extra = options.extra;
    this.headers = options.headers;
  }
}

/** A problem that asks its client to retry after `seconds`, with a code RETRY_AFTER_CODES holds. */
export function retryLater(status: number, code: RetryAfterCode, detail: string, seconds: number, extra?: Record<string, unknown>): Problem {
  const headers: Record<string, string> = { 'retry-after': String(seconds) };
  return new Problem(status, code, detail, { headers, ...(extra ? { extra } : {}) });
}

const TITLES: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
  406: 'Not Acceptable', 408: 'Request Timeout', 409: 'Conflict', 413: 'Content Too Large', 414: 'URI Too Long', 415: 'Unsupported Media Type', 417: 'Expectation Failed',
  422: 'Unprocessable Content', 429: 'Too Many Requests', 431: 'Request Header Fields Too Large', 500: 'Internal Server Error', 501: 'Not Implemented', 503: 'Service Unavailable',
  505: 'HTTP Version Not Supported',
};

export function problemBody(p: Problem, requestId: string): Record<string, unknown> {
  return {
    type: `https://gavel.dev/problems/${p.code}`,
    title: TITLES[p.status] ?? STATUS_CODES[p.status] ?? 'Error',
    status: p.status,
    code: p.code,
    detail: p.detail,
    ...(p.errors ? { errors: p.errors } : {}),
    ...(p.extra ?? {}),
    request_id: requestId,
  };
}

/** Field errors one answer carries, and how long a pointer in it may be (a body of 64 KiB names a member of 30,000 characters 10,000 times). */
export const MAX_FIELD_ERRORS = 100;
export const MAX_POINTER_LENGTH = 1_000;
const clip = (e: FieldError): FieldError => (e.pointer.length > MAX_POINTER_LENGTH ? { ...e, pointer: `${e.pointer.slice(0, MAX_POINTER_LENGTH)}…` } : e);
/**
 * 400 with every field error, up to MAX_FIELD_ERRORS (then one `too_many_errors`), each pointer cut
 * at MAX_POINTER_LENGTH characters: an answer is never much larger than the request (one of 60 KB
 * made a 10 MB answer and ran the process out of memory).
 */
export function invalidRequest(errors: FieldError[], detail = 'the request is not valid; see errors'): Problem {
  return new Problem(400, 'invalid_request', detail, { errors: listedErrors(errors) });
}
/** The field errors an answer lists: the first MAX_FIELD_ERRORS, clipped, then one `too_many_errors`. */
export function listedErrors(errors: readonly FieldError[]): FieldError[] {
  const listed = errors.slice(0, MAX_FIELD_ERRORS).map(clip);
  if (errors.length > MAX_FIELD_ERRORS) listed.push({ pointer: '', code: 'too_many_errors', message: `more than ${MAX_FIELD_ERRORS} errors; the rest are not listed` });
  return listed;
}
export const unauthorized = (detail = 'a valid API key is required') => new Problem(401, 'unauthorized', detail);
/**
 * 401 for the machine plane's bearer keys, with the challenge RFC 9110 §11.6.1 asks of a 401: no
 * error for a request that sent no key, `invalid_token` for one whose key was refused (RFC 6750 §3).
 */
export const bearerUnauthorized = (detail: string, sentKey: boolean) =>
  new Problem(401, 'unauthorized', detail, { headers: { 'www-authenticate': sentKey ? 'Bearer error="invalid_token"' : 'Bearer' } });
export const forbidden = (detail: string) => new Problem(403, 'forbidden', detail);
export const notFound = (detail: string) => new Problem(404, 'not_found', detail);
export const conflict = (detail: string, code = 'conflict') => new Problem(409, code, detail);
