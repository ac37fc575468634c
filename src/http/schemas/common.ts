// Schemas shared by route groups. Objects are closed (additionalProperties: false) by default.
import { Type, type TSchema, type TSchemaOptions } from 'typebox';
import { DEFAULT_LIMIT } from '../paging.ts';

/** A value of `t`, or null. */
export const Nullable = <T extends TSchema>(t: T, options?: TSchemaOptions) => Type.Union([t, Type.Null()], options);

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

const BODY_400 = 'Malformed or invalid request: for invalid_request, `errors` lists every fault with its JSON pointer and a code of its own such as required, unknown_field, wrong_type, bad_format, forbidden_member (__proto__), duplicate_member (a name repeated in one object) or invalid_unicode (not UTF-8, a lone surrogate or a NUL)';

/** What each error status means, unless the route's shape or the route says more. */
const MEANING: Record<number, string> = {
  400: 'Invalid path or query parameters: `errors` lists every fault with its JSON pointer, where it is (`in`) and a code of its own',
  403: 'The caller may not do this',
  404: 'No such resource in the project',
  409: 'Conflicts with the current state',
  413: 'The body is larger than the route accepts',
  415: 'The body is not application/json in UTF-8, or it is content-encoded',
  422: 'Well-formed but refused',
  429: 'Too many attempts; retry after `retry-after`',
  500: 'A fault of the service, logged; the body gives no details',
  503: 'Temporarily unavailable; retry after `retry-after`',
};

const DAMAGE_500 = 'internal_error: a fault of the service, logged, the body giving no details; any other code: a stored record found damaged, which the body\'s detail names';

/** How a route is reached: it fixes the refusals every route reached that way can give. */
export interface RouteShape {
  /** The credential the route demands: an API key (machine plane), a console session, or none. */
  auth: 'apiKey' | 'session' | 'none';
  /** The route reads a JSON body (POST, PUT). */
  body?: boolean;
  /**
   * The path names a project (`…/{projectId}/…`), so its parameters are validated and a key or
   * session of another project, or without the route's role, is refused. Default: true with a credential.
   */
  project?: boolean;
}

/** Per status, the codes a route gives beyond its shape's: a list, or a description of its own with them. */
export type ErrorOverrides = Record<number, readonly string[] | { what: string; codes: readonly string[] }>;

// Array.isArray does not narrow a readonly array.
const isCodeList = (o: unknown): o is readonly string[] => Array.isArray(o);

/** The refusals every route of this shape can give, by status (what it means, and its codes). */
function shapeErrors({ auth, body = false, project = auth !== 'none' }: RouteShape): Record<number, { what: string; codes: string[] }> {
  const out: Record<number, { what: string; codes: string[] }> = {};
  // A body is read (http/body.ts, http/errors.ts) before it is validated; a GET's is never read.
  if (body) out[400] = { what: BODY_400, codes: ['malformed_json', 'invalid_request', 'invalid_content_length', 'bad_request'] };
  else if (project) out[400] = { what: MEANING[400]!, codes: ['invalid_request'] };
  if (auth === 'apiKey') out[401] = { what: 'API key missing, malformed, unknown or revoked, or its holder no longer a member', codes: ['unauthorized'] };
  if (auth === 'session') out[401] = { what: 'No live console session (missing, expired or ended), or the session cookie sent more than once', codes: ['unauthorized'] };
  // http/auth: forbidden for another project or a missing role; csrf_failed on console mutations only.
  const refused = [...(auth !== 'none' && project ? ['forbidden'] : []), ...(auth === 'session' && body ? ['csrf_failed'] : [])];
  if (refused.length > 0) out[403] = { what: MEANING[403]!, codes: refused };
  if (body) {
    out[413] = { what: MEANING[413]!, codes: ['payload_too_large'] };
    out[415] = { what: MEANING[415]!, codes: ['unsupported_media_type'] };
  }
  out[500] = { what: MEANING[500]!, codes: ['internal_error'] };
  // Any route, while the service closes (http/app.ts); any that reads the database, while it cannot
  // be reached; any that may write (a body, or a console session, whose last use is recorded), while its disk is full.
  out[503] = { what: MEANING[503]!, codes: ['shutting_down', ...(auth !== 'none' || body ? ['database_unavailable'] : []), ...(body || auth === 'session' ? ['storage_full'] : [])] };
  return out;
}

/** The codes an error response's description lists: "(code x)" or "(codes x, y)", as problemResponse writes them. */
export const codesIn = (description: string): string[] => /\(codes? ([a-z_, ]+)\)$/.exec(description)?.[1]!.split(', ') ?? [];

const problemResponse = (what: string, codes: readonly string[]): ProblemResponse => ({
  description: `${what} (code${codes.length > 1 ? 's' : ''} ${codes.join(', ')})`,
  content: { 'application/problem+json': { schema: Type.Ref('Problem') } },
});

/**
 * Error responses of a route, merged into its `response`: those of its shape, and its own codes.
 * Router-level answers (no such route, 405, 414, bad_url) are not an operation's: the document's
 * description states them once (http/app.ts).
 */
export function errorResponses(shape: RouteShape, own: ErrorOverrides = {}): Record<number, ProblemResponse> {
  const base = shapeErrors(shape);
  const out: Record<number, ProblemResponse> = {};
  for (const status of new Set([...Object.keys(base), ...Object.keys(own)].map(Number))) {
    const o = own[status];
    const spec: { what?: string; codes: readonly string[] } = o === undefined ? { codes: [] } : isCodeList(o) ? { codes: o } : o;
    const codes = [...new Set([...(base[status]?.codes ?? []), ...spec.codes])];
    if (codes.length === 0) throw new Error(`error response ${status} names no code`);
    // A 500 that names stored damage (policy_integrity, log_damaged) explains it in its detail.
    const what = status === 500 && codes.length > 1 ? DAMAGE_500 : base[status]?.what ?? MEANING[status];
    out[status] = problemResponse(spec.what ?? what ?? 'Refused', codes);
  }
  return out;
}

/** The form of a project id (console auth checks it before the schema does: http/auth/session.ts). */
export const PROJECT_ID_PATTERN = '^prj_[0-9a-z]{26}$';
export const ProjectParams = Type.Object({
  projectId: Type.String({ pattern: PROJECT_ID_PATTERN, description: 'Project id' }),
});

export const MAX_SAFE_MINOR = Number.MAX_SAFE_INTEGER;
export const Money = Type.Object({
  minor: Type.Integer({ minimum: 0, maximum: MAX_SAFE_MINOR, description: 'the amount in minor units of the currency (cents for EUR: 3050 is 30.50 EUR)' }),
  currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'three capital letters, as an ISO 4217 code (the form is checked, not the list)' }),
}, { additionalProperties: false });

/**
 * A page size as a query string carries it: decimal 1-500, one spelling each (query values are never
 * coerced, so `0x10`, `1e2`, `+5` or `050` are refused, not read as numbers).
 */
export const PageLimit = Type.String({ pattern: '^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$', description: 'Page size, 1-500 (default 50)' });
/**
 * Opaque to clients, but of one form: base64url of a JSON object (http/paging.ts), long enough for
 * a key cursor over the longest DID. The form is declared as annotations, which the validator does
 * not check (the list's own decoder answers any other cursor 400 invalid_cursor), so that the
 * request log masks a value of another form, a key sent as `?cursor=` (http/logged-url.ts).
 */
/** What a page cursor is (http/openapi-responses.ts puts the encoding back into the document). */
export const PAGE_CURSOR_CONTENT = { contentEncoding: 'base64url', contentMediaType: 'application/json' } as const;
export const PageCursor = Type.String({ maxLength: 4096, ...PAGE_CURSOR_CONTENT, description: 'next_cursor of the previous page of this list' });
export const pageLimit = (limit: string | undefined): number => (limit === undefined ? DEFAULT_LIMIT : Number(limit));

export const PageQuery = Type.Object({
  cursor: Type.Optional(PageCursor),
  limit: Type.Optional(PageLimit),
}, { additionalProperties: false });

export const Timestamp = Type.String({ format: 'date-time' });
/**
 * At least one visible character (a letter, digit, punctuation or symbol): text a person writes into
 * the record, where white space, invisible format characters (U+200B…) or the blank letters and
 * symbols (Hangul fillers, the Braille blank) would record nothing.
 */
const VISIBLE_CHARACTER = '(?![\\u115F\\u1160\\u3164\\uFFA0\\u2800])[\\p{L}\\p{N}\\p{P}\\p{S}]';
/**
 * What text a person reads may not hold, since it hides text or shows it in another order than it
 * was written: format characters (Cf: the bidi embeddings, overrides and isolates U+202A–U+202E and
 * U+2066–U+2069, zero-width characters, the byte order mark) and the line and paragraph separators
 * (U+2028, U+2029), which some viewers break a line at and others do not.
 */
const HIDING = '\\p{Cf}\\p{Zl}\\p{Zp}';
/**
 * The two format characters writing needs: the zero-width non-joiner (U+200C, Persian and Indic
 * words) and joiner (U+200D, emoji sequences, Indic conjuncts). Neither moves text nor hides a letter.
 */
const JOINERS = '[\\u200C\\u200D]';
/**
 * A character that would show a person other text than a statement holds, where the statement is
 * RFC 8785 JSON (an approval's, docs/approvals.md): a hiding character, kept as is, and DEL and the
 * C1 controls (U+007F–U+009F), which RFC 8785 does not escape either. Other controls are written as
 * escapes a person can read.
 */
export const HIDES_IN_A_STATEMENT = new RegExp(`(?!${JOINERS})[${HIDING}\\u007F-\\u009F]`, 'u');
/** One line of text a person reads: a visible character, and no control (Cc) or hiding character. */
const ONE_LINE_TEXT_PATTERN = `^(?=[\\s\\S]*${VISIBLE_CHARACTER})(?:${JOINERS}|[^\\p{Cc}${HIDING}])*$`;
/**
 * Text a person writes, of one line or more: a visible character, and no hiding character nor any
 * control (Cc: U+0000–U+001F, U+007F–U+009F) but tab, line feed and carriage return.
 */
const MULTI_LINE_TEXT_PATTERN = `^(?=[\\s\\S]*${VISIBLE_CHARACTER})(?:${JOINERS}|[^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F-\\x9F${HIDING}])*$`;
/** What MULTI_LINE_TEXT_PATTERN refuses, in the words of a field's description (a refusal quotes it: http/errors.ts). */
const MULTI_LINE_TEXT_RULE = 'at least one visible character; lines may break and tabs are kept, but no other control character and no format character (such as the bidi overrides and isolates U+202A–U+202E, U+2066–U+2069, or a zero-width space; the joiners U+200C and U+200D are kept) or line separator (U+2028, U+2029), which could show the text in another order than it was written';
/** What ONE_LINE_TEXT_PATTERN refuses, in the words of a field's description. */
const ONE_LINE_TEXT_RULE = 'one line with at least one visible character, and no control character (a line break, a tab), format character (such as the bidi overrides and isolates U+202A–U+202E, U+2066–U+2069, or a zero-width space; the joiners U+200C and U+200D are kept) or line separator (U+2028, U+2029), which could show the text in another order than it was written';
/** Free text on one line that a person reads (a label, a name), up to `maxLength` characters. */
export const oneLineText = (maxLength: number, what: string) =>
  Type.String({ minLength: 1, maxLength, pattern: ONE_LINE_TEXT_PATTERN, description: `${what}: ${ONE_LINE_TEXT_RULE}` });
/** Free text a person writes into the record (a reason, a note), lines and all, up to `maxLength` characters. */
export const multiLineText = (maxLength: number, what: string) =>
  Type.String({ minLength: 1, maxLength, pattern: MULTI_LINE_TEXT_PATTERN, description: `${what}: ${MULTI_LINE_TEXT_RULE}` });
/** An optional reason a person gives for an act (a freeze, a release, a withdrawal), kept in its audit event. */
export const Reason = multiLineText(500, 'Why, in words, kept in the audit event');
