// What a log line says of a request's URL. A query parameter Gavel does not take is refused, yet the
// request line was logged first with its whole URL: a caller that put a credential there (an
// `api_key=`, a `token=`, as other services take them, or a key alone, `?gvl_…`) left it in the log.
// So a log line keeps the values of the parameters the route declares (cursors, limits, filters)
// when they have the form it declares, and masks every other one, and every name sent alone. A path
// parameter likewise: a permit pasted where its commitment belongs (`…/permits/<permit>/revoke`) is
// masked, as a value of no form its route takes. (A path no route serves is logged as sent.)

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
    const form = params?.get(name.slice(1));
    const value = form && decoded(raw, false);
    return value !== undefined && form!(value) ? raw : MASK;
  }).join('/');
}

interface LoggedRequest {
  method: string; url: string; ip?: string; host?: string;
  headers?: Record<string, unknown>; socket?: { remotePort?: number } | null;
  routeOptions?: { url?: string; schema?: { querystring?: unknown; params?: unknown } };
}

/** Fastify's request serializer, but with `loggedPath`'s path and `loggedUrl`'s query. */
export function requestForLog(req: LoggedRequest): Record<string, unknown> {
  const schema = req.routeOptions?.schema;
  const q = req.url.search(/[?#]/);
  const path = loggedPath(q < 0 ? req.url : req.url.slice(0, q), req.routeOptions?.url, declaredForms(schema?.params));
  return {
    method: req.method,
    url: `${path}${q < 0 ? '' : loggedUrl(req.url.slice(q), declaredForms(schema?.querystring))}`,
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket ? req.socket.remotePort : undefined,
  };
}
