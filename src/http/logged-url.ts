// What a log line says of a request's URL. A query parameter Gavel does not take is refused, yet the
// request line was logged first with its whole URL: a caller that put a credential there (an
// `api_key=`, a `token=`, as other services take them) left it in the log. So a log line keeps the
// values of the parameters the route declares (cursors, limits, filters) and masks every other one.

const MASK = '[redacted]';
const declaredByQuerySchema = new WeakMap<object, ReadonlySet<string>>();

/** `url` with the value of every query parameter not named in `declared` masked (all of them without it). */
export function loggedUrl(url: string, declared?: ReadonlySet<string>): string {
  // A `#` on the wire is refused (http/message-checks.ts), but the refusal logs the URL, and the
  // router reads what follows one as a query: masked like one, as is a pair after a second `?`.
  const q = url.search(/[?#]/);
  if (q < 0) return url;
  const pairs = url.slice(q + 1).split(/([&?#])/).map((pair, i) => {
    const eq = pair.indexOf('=');
    if (i % 2 === 1 || eq < 0) return pair;
    return declared?.has(pair.slice(0, eq)) ? pair : `${pair.slice(0, eq + 1)}${MASK}`;
  });
  return `${url.slice(0, q + 1)}${pairs.join('')}`;
}

/** The names a route's querystring schema declares (none for a route without one, or no route). */
export function declaredQueryNames(schema: unknown): ReadonlySet<string> | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  let names = declaredByQuerySchema.get(schema);
  if (!names) {
    const properties = (schema as { properties?: Record<string, unknown> }).properties;
    names = new Set(properties ? Object.keys(properties) : []);
    declaredByQuerySchema.set(schema, names);
  }
  return names;
}

interface LoggedRequest {
  method: string; url: string; ip?: string; host?: string;
  headers?: Record<string, unknown>; socket?: { remotePort?: number } | null;
  routeOptions?: { schema?: { querystring?: unknown } };
}

/** Fastify's request serializer, but with `loggedUrl`'s URL. */
export function requestForLog(req: LoggedRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: loggedUrl(req.url, declaredQueryNames(req.routeOptions?.schema?.querystring)),
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket ? req.socket.remotePort : undefined,
  };
}
