// Which route a path belongs to, whatever method asks (decision 0700). The router keeps a tree per
// method, so a path a static route holds for one method (POST …/agents/freeze) reached a parametric
// route of another (GET …/agents/{agentDid}) as its parameter's value, and a parameter matched an
// empty segment (…/approvals/ as {approvalId} ''): both were answered 400 for a bad parameter where
// the path names no such route. The not-found handler answers them instead (405 with the static
// route's Allow, or 404), as it answers every path no route of the method holds.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import { declaredForms, type KnownRoute } from './logged-url.ts';

/** One route path, the methods registered on it (HEAD copies of GETs left out), and its parameters' forms. */
export interface RoutePath extends KnownRoute { url: string; regex: RegExp; methods: Set<string>; segments: string[] }

const isParam = (segment: string) => segment.startsWith(':');

/**
 * True when `a` is the router's choice over `b` for a path both match: at the first segment where
 * one is static and the other a parameter, `a` is the static one (find-my-way tries static first).
 */
function moreSpecific(a: RoutePath, b: RoutePath): boolean {
  const i = a.segments.findIndex((s, k) => isParam(s) !== isParam(b.segments[k] ?? ''));
  return i >= 0 && !isParam(a.segments[i]!);
}

/** True when some path matches both: as many segments, equal wherever both are static. */
const overlap = (a: RoutePath, b: RoutePath) =>
  a.segments.length === b.segments.length && a.segments.every((s, k) => isParam(s) || isParam(b.segments[k]!) || s === b.segments[k]);

/**
 * The path of `url` as the router matches it: the scheme and authority of an absolute-form target
 * dropped (RFC 9112 §3.2.2), the query or fragment cut, and escapes of characters other than the
 * reserved ones decoded (`%73od` is `sod`, RFC 3986 §6.2.2.2; `%2F` stays, as it does not split a
 * segment). A 405 must name the path a GET on it would have reached, however the client spelt it.
 */
export function routedPath(url: string): string {
  const absolute = /^https?:\/\/[^/?#]*/i.exec(url);
  const target = absolute ? url.slice(absolute[0].length) || '/' : url;
  const path = target.split(/[?#]/, 1)[0]!;
  // decodeURI leaves the escapes of reserved characters (`/`, `?`, `#`, `:`…) as they are. A
  // malformed escape never gets here: the router refuses it first (400 bad_url).
  try { return decodeURI(path); } catch { return path; }
}

export class RouteTable {
  private readonly byUrl = new Map<string, RoutePath>();

  /** onRoute: records the route's path and methods, and on a parametric route the hook below. */
  readonly onRoute = (route: RouteOptions): void => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    let entry = this.byUrl.get(route.url);
    if (!entry) {
      const regex = new RegExp('^' + route.url.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\\?:[A-Za-z_]+/g, '[^/]+') + '$');
      entry = { url: route.url, regex, methods: new Set(), segments: route.url.split('/'), params: declaredForms(route.schema?.params) };
      this.byUrl.set(route.url, entry);
    }
    for (const m of methods) if (m !== 'HEAD') entry.methods.add(m);
    // A route without parameters (POST /v1/authorize among them) is only ever reached by its own path: no hook.
    if (entry.segments.some(isParam)) route.onRequest = [this.strayHook(entry), ...[route.onRequest ?? []].flat()];
  };

  /** Every route path, for the request log to read a path no route serves against (http/logged-url.ts). */
  paths(): Iterable<RoutePath> { return this.byUrl.values(); }

  /** The route path the router reads `path` as, for any method: the most specific that matches it, if any. */
  of(path: string): RoutePath | undefined {
    let best: RoutePath | undefined;
    for (const entry of this.byUrl.values()) if (entry.regex.test(path) && (!best || moreSpecific(entry, best))) best = entry;
    return best;
  }

  /**
   * onRequest of a parametric route: a request that reached it with an empty parameter, or on a path
   * a more specific route holds (for other methods), is answered as one that reached no route. The
   * rivals are found on the first request, once every route is registered; most routes have none,
   * and then the check is one comparison per parameter.
   */
  private strayHook(entry: RoutePath) {
    let rivals: RegExp[] | undefined;
    return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
      rivals ??= [...this.byUrl.values()].filter((other) => other !== entry && overlap(other, entry) && moreSpecific(other, entry)).map((other) => other.regex);
      const params = request.params as Record<string, string>;
      let stray = false;
      for (const name in params) if (params[name] === '') stray = true;
      if (!stray && rivals.length > 0) {
        const path = routedPath(request.url);
        stray = rivals.some((regex) => regex.test(path));
      }
      if (stray) reply.callNotFound();
      else done();
    };
  }
}
