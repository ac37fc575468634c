// Schemas shared by route groups. Objects are closed (additionalProperties: false) by default.
import { Type, type TSchema } from 'typebox';

export const ProblemSchema = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  code: Type.String({ description: 'Stable machine-readable error code' }),
  detail: Type.String(),
  errors: Type.Optional(Type.Array(Type.Object({
    pointer: Type.String({ description: 'JSON Pointer into the request part' }),
    code: Type.String(),
    message: Type.String(),
    in: Type.Optional(Type.String()),
  }))),
  request_id: Type.String(),
}, { additionalProperties: true, $id: 'Problem' });

/** An error response as Fastify and the OpenAPI document take it: problem+json, as the service sends it. */
export interface ProblemResponse { description: string; content: { 'application/problem+json': { schema: TSchema } } }

/** What each error status means, and the `code`s it carries unless a route says otherwise. */
const ERROR_DOCS: Record<number, { what: string; codes: readonly string[] }> = {
  400: { what: 'Malformed or invalid request: for invalid_request, `errors` lists every fault with its JSON pointer and a code of its own such as required, unknown_field, wrong_type, bad_format, forbidden_member (__proto__), duplicate_member (a name repeated in one object) or invalid_unicode (not UTF-8, a lone surrogate or a NUL)', codes: ['malformed_json', 'invalid_request'] },
  401: { what: 'API key or session missing, wrong or revoked', codes: ['unauthorized'] },
  403: { what: 'The caller may not do this: a role it lacks, another project, or a console mutation without a valid CSRF token', codes: ['forbidden', 'csrf_failed'] },
  404: { what: 'No such resource in the project', codes: ['not_found'] },
  409: { what: 'Conflicts with the current state', codes: [] },
  413: { what: 'The body is larger than the route accepts', codes: ['payload_too_large'] },
  415: { what: 'The body is not application/json', codes: ['unsupported_media_type'] },
  422: { what: 'Well-formed but refused', codes: [] },
  429: { what: 'Too many attempts; retry after `retry-after`', codes: ['too_many_attempts'] },
  500: { what: 'A fault of the service, logged; the body gives no details', codes: ['internal_error'] },
  503: { what: 'Temporarily unavailable; retry after `retry-after`', codes: ['shutting_down'] },
};

/**
 * Per status: the codes the route gives (replacing the default list), a description of its own
 * with or without codes, or false for a status the route never gives.
 */
export type ErrorOverrides = Record<number, readonly string[] | { what?: string; codes?: readonly string[] } | false>;

// Array.isArray does not narrow a readonly array.
const isCodeList = (o: unknown): o is readonly string[] => Array.isArray(o);

const problemResponse = (what: string, codes: readonly string[]): ProblemResponse => ({
  description: `${what} (${codes.length === 0 ? 'a code specific to the route' : `code${codes.length > 1 ? 's' : ''} ${codes.join(', ')}`})`,
  content: { 'application/problem+json': { schema: Type.Ref('Problem') } },
});

/** Error responses of a route, merged into its `response`: every default status unless `overrides` drops or refines it. */
export function errorResponses(overrides: ErrorOverrides = {}): Record<number, ProblemResponse> {
  const out: Record<number, ProblemResponse> = {};
  for (const status of new Set([...Object.keys(ERROR_DOCS), ...Object.keys(overrides)].map(Number))) {
    const o = overrides[status];
    if (o === false) continue;
    const base = ERROR_DOCS[status] ?? { what: 'Refused', codes: [] };
    const spec = o === undefined ? {} : isCodeList(o) ? { codes: o } : o;
    out[status] = problemResponse(spec.what ?? base.what, spec.codes ?? base.codes);
  }
  return out;
}

export const ProjectParams = Type.Object({
  projectId: Type.String({ pattern: '^prj_[0-9a-z]{26}$', description: 'Project id' }),
});

export const MAX_SAFE_MINOR = Number.MAX_SAFE_INTEGER;
export const Money = Type.Object({
  minor: Type.Integer({ minimum: 0, maximum: MAX_SAFE_MINOR, description: 'Amount in minor units' }),
  currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code' }),
}, { additionalProperties: false });

export const PageQuery = Type.Object({
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
}, { additionalProperties: false });

export const Timestamp = Type.String({ format: 'date-time' });
