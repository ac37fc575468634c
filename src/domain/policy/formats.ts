// Shapes of the literals a policy and an evaluation input carry. Each check is linear in
// the (bounded) string length; none backtracks badly.
import { isDid as isDidSyntax } from '../permit/did.ts';
import { parseInstant } from '../../lib/instant.ts';

export const RESOURCE_SCHEME = 'resource://';
export const MAX_RESOURCE_LENGTH = 512;
export const MAX_ACTION_LENGTH = 64;

// RFC 3986 pchar and "/" without "*": "*" is reserved for patterns, so no resource
// can be confused with one.
const RESOURCE_CHARS = /^[A-Za-z0-9\-._~%!$&'()+,;=:@/]*$/;
const BAD_PERCENT = /%(?![0-9A-Fa-f]{2})/;

function isDotSegment(segment: string): boolean {
  if (segment.length > 6) return false;
  const decoded = segment.replace(/%2e/gi, '.');
  return decoded === '.' || decoded === '..';
}

// One pass: segments of pchars, none empty, none a dot segment ("." or "..", also written %2e: the
// segment lookahead), every "%" followed by two hex digits (the lookahead after the scheme).
// Its source is exported so that request schemas refuse what the evaluator would (a 400 before
// any decision) with the same definition.
const SEGMENT = "(?!(?:\\.|%2[eE]){1,2}(?:/|$))[A-Za-z0-9\\-._~%!$&'()+,;=:@]+";
export const RESOURCE_URI_PATTERN = `^resource://(?!.*%(?![0-9A-Fa-f]{2}))${SEGMENT}(?:/${SEGMENT})*$`;
const RESOURCE_URI = new RegExp(RESOURCE_URI_PATTERN);
/**
 * A requested resource (POST /v1/authorize, simulation) is a resource URI in one normal form: it
 * escapes only what a resource cannot hold as is, in uppercase hex (RFC 3986 §6.2.2.1–2). So no
 * two spellings of one resource reach the policy: `%73ecret` is `secret` to any decoder, and would
 * otherwise pass a DENY on `resource://files/secret*`. That also refuses every escape a downstream
 * decoder would turn into structure: an encoded "/" or "\\" (a segment that splits into `../..`
 * once decoded: `resource://pay/eu/..%2Fus` must not match `resource://pay/eu/*`), "." (an encoded
 * dot segment), "%" (decoded twice, `%252F` is a "/"), "#" and "?" (a URL's fragment and query once
 * decoded), or a control character. What may be escaped: bytes 0x80 and above (UTF-8), space,
 * `" * < > [ ] ^ \` { | }`. A policy saved or simulated
 * now must write its resource literals in this form (validate.ts, `resource_not_normal`); a version
 * stored before keeps the resource grammar, and a literal of it written otherwise matches no request.
 */
const REQUEST_RESOURCE_PATTERN = `^(?!.*%(?:[0-9A-Fa-f][a-f]|[a-f][0-9A-F]|[01][0-9A-F]|2[134-9B-F]|3[0-9ABDF]|4[0-9A-F]|5[0-9ACF]|6[1-9A-F]|7[0-9AEF]))${RESOURCE_URI_PATTERN.slice(1)}`;
const REQUEST_RESOURCE = new RegExp(REQUEST_RESOURCE_PATTERN);

/**
 * True for `resource://<path>`: non-empty segments, no dot segments (also percent-encoded),
 * well-formed percent escapes, at most 512 characters. Refusing `..` keeps
 * `resource://public/../admin` from matching the pattern `resource://public/*`.
 */
export function isResourceUri(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_RESOURCE_LENGTH && RESOURCE_URI.test(value);
}

/**
 * True when every percent-escape decodes as UTF-8 (an overlong `%C0%AF` is a "/" to a lax decoder)
 * into text in Unicode normal form C (`cafe%CC%81` is `caf%C3%A9` to a reader that normalizes).
 */
function escapesDecode(value: string): boolean {
  if (value.indexOf('%') === -1) return true;
  let decoded: string;
  try { decoded = decodeURIComponent(value); } catch { return false; }
  return decoded.normalize('NFC') === decoded;
}

/**
 * What a request may name: a resource URI (isResourceUri) in its one spelling: without the escapes
 * REQUEST_RESOURCE_PATTERN refuses, with a first segment an RFC 3986 reader could not read as
 * another host (ambiguousAuthority), without path parameters (`;`, which Tomcat and Spring strip:
 * `secret;x/y` is `secret/y` to them, and `..;` is `..`), and whose escapes decode as UTF-8 in
 * Unicode normal form C. The request schemas check it as the format `gavel-request-resource` (http/validation.ts).
 */
export function isRequestResource(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_RESOURCE_LENGTH && REQUEST_RESOURCE.test(value)
    && !ambiguousAuthority(value) && value.indexOf(';') === -1 && escapesDecode(value);
}

/**
 * The first segment is where an RFC 3986 reader finds a host: case-insensitive (`FILES` is `files`),
 * with a trailing dot the same host (`files.`), and a userinfo (`x@files`) or a port, empty or not
 * (`files:`), gives one resource another spelling. A requested resource names its first segment in
 * lowercase (its escapes aside, whose hex is uppercase), without `@`, `:` or a trailing dot.
 */
function ambiguousAuthority(value: string): boolean {
  const end = value.indexOf('/', RESOURCE_SCHEME.length);
  const host = value.slice(RESOURCE_SCHEME.length, end === -1 ? value.length : end);
  // Escapes aside for the letters' case (their hex is uppercase), not for the trailing dot: in
  // `docs.%C3%A9t%C3%A9` the dot is followed by "été", and `v1.%E2%82%AC` ends in "€".
  return /[A-Z@:]/.test(host.replace(/%[0-9A-F]{2}/g, '')) || host.endsWith('.');
}

/**
 * A resource pattern some request could match, in a request's one spelling: a resource, or a prefix
 * and a "*". A prefix may end at a "/" or inside a segment: judged as the shortest resource it
 * starts, or as itself when it is already as long as a resource may be. Permit issuance and policy
 * literals saved now hold their patterns to it.
 */
export function isRequestPattern(pattern: string): boolean {
  if (!pattern.endsWith('*')) return isRequestResource(pattern);
  const prefix = withoutOpenEnd(pattern.slice(0, -1));
  return isRequestResource(prefix.length < MAX_RESOURCE_LENGTH ? `${prefix}x` : prefix);
}

/**
 * A prefix may end inside an escape (`%`, `%2`) or inside a UTF-8 sequence (`caf%C3` covers
 * `caf%C3%A9`): that open end is left out of the judgement, which the rest of the prefix still
 * gets. Only a well-formed start of a sequence counts as one (`%C0%AF` never begins a character).
 */
function withoutOpenEnd(prefix: string): string {
  const p = prefix.replace(/%[0-9A-F]?$/, '');
  const bytes: number[] = [];
  for (let at = p.length - 3; at >= 0 && p[at] === '%' && /^[0-9A-F]{2}$/.test(p.slice(at + 1, at + 3)); at -= 3) {
    bytes.unshift(parseInt(p.slice(at + 1, at + 3), 16));
    if (bytes[0]! < 0x80 || bytes[0]! >= 0xc0 || bytes.length === 4) break; // a byte that is not a continuation ends the sequence
  }
  const lead = bytes[0];
  if (lead === undefined || lead < 0xc2 || lead > 0xf4) return p;
  const needed = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
  const open = bytes.length < needed && bytes.slice(1).every((b) => b >= 0x80 && b < 0xc0);
  return open ? p.slice(0, p.length - 3 * bytes.length) : p;
}

export type ResourcePattern = { kind: 'exact'; uri: string } | { kind: 'prefix'; prefix: string };

/**
 * Parses a matches_resource pattern: a resource URI, or a URI prefix followed by one
 * trailing `*` that matches any remainder (including none and further `/` segments).
 * Returns null when malformed.
 */
export function parseResourcePattern(value: unknown): ResourcePattern | null {
  if (typeof value !== 'string' || value.length > MAX_RESOURCE_LENGTH) return null;
  if (!value.endsWith('*')) return isResourceUri(value) ? { kind: 'exact', uri: value } : null;
  const prefix = value.slice(0, -1);
  if (!prefix.startsWith(RESOURCE_SCHEME)) return null;
  const path = prefix.slice(RESOURCE_SCHEME.length);
  if (!RESOURCE_CHARS.test(path) || BAD_PERCENT.test(path)) return null;
  const segments = path.split('/');
  // Every complete segment must be valid; the last one is partial and may be empty.
  for (let i = 0; i < segments.length - 1; i++) {
    const segment = segments[i] as string;
    if (segment.length === 0 || isDotSegment(segment)) return null;
  }
  return { kind: 'prefix', prefix };
}

/** W3C DID syntax (domain/permit/did.ts), at most as long as a resource URI. */
export const isDid = (value: unknown): value is string => isDidSyntax(value, MAX_RESOURCE_LENGTH);

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Lowercase hex SHA-256, the form of a permit commitment. */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && SHA256_HEX.test(value);
}

/** Printable ASCII without spaces; the HTTP schemas take their `action` pattern from here. */
export const ACTION_PATTERN = '^[\\x21-\\x7e]+$';
const ACTION = new RegExp(ACTION_PATTERN);

/** An action: 1 to 64 printable ASCII characters without spaces. */
export function isAction(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_ACTION_LENGTH && ACTION.test(value);
}

const TOKEN = /^[A-Za-z0-9._:-]{1,64}$/;

/** A short token such as a backend finality level. */
export function isToken(value: unknown): value is string {
  return typeof value === 'string' && TOKEN.test(value);
}

const FINER_THAN_MILLISECONDS = /\.\d{4}/;

/**
 * Parses an RFC 3339 timestamp (`2025-01-31T09:00:00Z`, `2025-01-31T10:00:00.250+01:00`) as
 * parseInstant does, to epoch milliseconds; null when malformed or not a real calendar instant.
 * At most millisecond precision: a policy compares instants to the millisecond, and a finer one
 * truncated would move the edge of `lt` or `gte`.
 */
export function parseTimestamp(value: unknown): number | null {
  if (typeof value !== 'string' || value.length > 40 || FINER_THAN_MILLISECONDS.test(value)) return null;
  return parseInstant(value);
}
