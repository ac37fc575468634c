// What a log line says of a request's URL. A query parameter Gavel does not take is refused, yet the
// request line was logged first with its whole URL: a caller that put a credential there (an
// `api_key=`, a `token=`, as other services take them, or a key alone, `?gvl_…`) left it in the log.
// So a log line keeps the values of the parameters the route declares (cursors, limits, filters)
// when they have the form it declares, and masks every other one, and every name sent alone. A path
// parameter likewise: a permit pasted where its commitment belongs (`…/permits/<permit>/revoke`) is
// masked, as a value of no form its route takes. A path no route serves (a 404, a 405) keeps what
// lines up with a route and the words a person types (a typo, `/v1/projcts/…`), and masks the rest.

const MASK = '[redacted]';

/** Whether a parameter's value (decoded) has the form its schema declares. */
type Form = (value: string) => boolean;
/** A route's declared parameters: by name, the form of each (a plain set of names keeps any value). */
export type Declared = ReadonlySet<string> | ReadonlyMap<string, Form>;

const formsBySchema = new WeakMap<object, ReadonlyMap<string, Form>>();
const routeSegments = new Map<string, readonly string[]>();

const decoded = (raw: string, query: boolean): string | undefined => {
  try { return decodeURIComponent(query ? raw.replaceAll('+', ' ') : raw); } catch { return undefined; }
};

/** Whether a path segment, decoded, has `form` (none: it has no declared form, and so is not one a route takes). */
const segmentHas = (form: Form | undefined, raw: string): boolean => {
  const value = form && decoded(raw, false);
  return value !== undefined && form!(value);
};

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Whether `value` is base64url whose bytes are a JSON text (a cursor's form: http/paging.ts). */
function isBase64urlJson(value: string): boolean {
  if (!BASE64URL.test(value)) return false;
  try { JSON.parse(Buffer.from(value, 'base64url').toString('utf8')); return true; } catch { return false; }
}

/**
 * The form a string schema declares: its pattern and length bounds, its content (base64url of JSON,
 * as a cursor's is: annotations the validator leaves to the route), or its list of literals (a union
 * of constants). A schema that declares no form takes any value.
 */
function formOf(schema: unknown): Form {
  const s = (typeof schema === 'object' && schema !== null ? schema : {}) as { pattern?: unknown; maxLength?: unknown; anyOf?: unknown; contentEncoding?: unknown; contentMediaType?: unknown };
  if (Array.isArray(s.anyOf)) {
    const literals = s.anyOf.map((b) => (b as { const?: unknown }).const);
    if (literals.every((l) => typeof l === 'string')) return (v) => literals.includes(v);
  }
  const pattern = typeof s.pattern === 'string' ? new RegExp(s.pattern, 'u') : undefined;
  const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity;
  const encoded = s.contentEncoding === 'base64url' ? (s.contentMediaType === 'application/json' ? isBase64urlJson : (v: string) => BASE64URL.test(v)) : undefined;
  return (v) => v.length <= max && (pattern === undefined || pattern.test(v)) && (encoded === undefined || encoded(v));
}

/** The form of each property an object schema declares (none for a route without one, or no route). */
export function declaredForms(schema: unknown): ReadonlyMap<string, Form> | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  let forms = formsBySchema.get(schema);
  if (!forms) {
    const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {};
    forms = new Map(Object.entries(properties).map(([name, p]) => [name, formOf(p)]));
    formsBySchema.set(schema, forms);
  }
  return forms;
}

const keeps = (declared: Declared | undefined, name: string, raw: string): boolean => {
  if (declared instanceof Map) {
    const form = declared.get(name);
    const value = form && decoded(raw, true);
    return value !== undefined && form!(value);
  }
  return declared?.has(name) ?? false;
};

/** `url` with the value of every query parameter not named in `declared`, or not of its form, masked (all of them without it). */
export function loggedUrl(url: string, declared?: Declared): string {
  // A `#` on the wire is refused (http/message-checks.ts), but the refusal logs the URL, and the
  // router reads what follows one as a query: masked like one, as is a pair after a second `?`.
  const q = url.search(/[?#]/);
  if (q < 0) return url;
  const pairs = url.slice(q + 1).split(/([&?#])/).map((pair, i) => {
    if (i % 2 === 1 || pair === '') return pair;
    const eq = pair.indexOf('=');
    // A name sent alone is a value as likely as a name (a key pasted after the `?`): no route takes one.
    if (eq < 0) return declared?.has(pair) ? pair : MASK;
    return keeps(declared, pair.slice(0, eq), pair.slice(eq + 1)) ? pair : `${pair.slice(0, eq + 1)}${MASK}`;
  });
  return `${url.slice(0, q + 1)}${pairs.join('')}`;
}

/**
 * `path` (no query) with each segment a route parameter takes masked unless its value has the form the
 * route's params schema declares. A path that does not line up with its route's (a segment count that
 * differs) is logged as the route's own pattern.
 */
export function loggedPath(path: string, route: string | undefined, params: ReadonlyMap<string, Form> | undefined): string {
  if (route === undefined || !route.includes(':')) return path;
  let names = routeSegments.get(route);
  if (!names) routeSegments.set(route, names = route.split('/'));
  const segments = path.split('/');
  if (segments.length !== names.length) return route;
  return segments.map((raw, i) => {
    const name = names[i]!;
    if (!name.startsWith(':')) return raw;
    return segmentHas(params?.get(name.slice(1)), raw) ? raw : MASK;
  }).join('/');
}

/** A route as a path no route serves is read against: its path's segments, and its parameters' forms. */
export interface KnownRoute { readonly segments: readonly string[]; readonly params: ReadonlyMap<string, Form> | undefined }

/**
 * A segment a person types, and mistypes (`projcts`, `favicon.ico`): lowercase letters, `.`, `-` and
 * `_`, at most 24. A key or token has digits or capitals in it, or is longer.
 */
const TYPED_WORD = /^[a-z._-]{0,24}$/;

/** Whether `raw` can stand at segment `i` of `route`: its static segment there, or a value of its parameter's declared form. */
function fitsRoute(route: KnownRoute, i: number, raw: string): boolean {
  const name = route.segments[i];
  if (name === undefined || !name.startsWith(':')) return name === raw;
  return segmentHas(route.params?.get(name.slice(1)), raw);
}

/**
 * `path` (no query), which no route serves, as a log line keeps it: the segments that line up with
 * some route's (`/v1/projects/<a project id>/…`, as far as one does), and after those each segment
 * that is a static segment of some route or a word a person types; any other (a key pasted into the
 * path, an id where a typo left no route to say what it is) is masked. A typo stays readable where it
 * was made: `/v1/projcts/prj_…/audit` is logged as `/v1/projcts/[redacted]/audit`.
 */
export function unroutedPath(path: string, routes: Iterable<KnownRoute>): string {
  const all = [...routes];
  const segments = path.split('/');
  let candidates = all;
  let matched = 0;
  while (matched < segments.length) {
    const i = matched;
    const next = candidates.filter((route) => fitsRoute(route, i, segments[i]!));
    if (next.length === 0) break;
    candidates = next;
    matched++;
  }
  const isStatic = (raw: string) => !raw.startsWith(':') && all.some((route) => route.segments.includes(raw));
  return segments.map((raw, i) => (i < matched || TYPED_WORD.test(raw) || isStatic(raw) ? raw : MASK)).join('/');
}

/** A request target no route took (a 404, a refusal before routing), as a log line keeps it. */
export function unroutedUrl(url: string, routes: Iterable<KnownRoute>): string {
  const q = url.search(/[?#]/);
  return q < 0 ? unroutedPath(url, routes) : `${unroutedPath(url.slice(0, q), routes)}${loggedUrl(url.slice(q))}`;
}

interface LoggedRequest {
  method: string; url: string; ip?: string; host?: string;
  headers?: Record<string, unknown>; socket?: { remotePort?: number } | null;
  routeOptions?: { url?: string; schema?: { querystring?: unknown; params?: unknown } };
}

/** A routed request's target: its path parameters and query values kept only in the forms `schema` declares. */
function routedUrl(url: string, route: string, schema: { querystring?: unknown; params?: unknown } | undefined): string {
  const q = url.search(/[?#]/);
  const path = loggedPath(q < 0 ? url : url.slice(0, q), route, declaredForms(schema?.params));
  return q < 0 ? path : `${path}${loggedUrl(url.slice(q), declaredForms(schema?.querystring))}`;
}

/**
 * Fastify's request serializer, but with `routedUrl`'s target, or `unroutedUrl`'s (read against
 * `routes`) for a request no route took.
 */
export function requestForLog(req: LoggedRequest, routes: Iterable<KnownRoute>): Record<string, unknown> {
  const route = req.routeOptions?.url;
  return {
    method: req.method,
    url: route === undefined ? unroutedUrl(req.url, routes) : routedUrl(req.url, route, req.routeOptions?.schema),
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket ? req.socket.remotePort : undefined,
  };
}
