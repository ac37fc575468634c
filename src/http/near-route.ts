// The route a path that reached none was likely meant for, named in the 404: the slips of a person
// typing URLs for curl. A trailing slash, a missing or capitalised /v1, and the other plane's prefix
// (permits are issued on the console plane, decisions asked on the machine plane) each leave a path
// that differs from a route's by one of these spellings only.
import type { RouteTable } from './route-table.ts';

const CONSOLE = '/v1/console/projects/';
const MACHINE = '/v1/projects/';

/** The spellings of `path` that a route could hold, nearest first. */
function respellings(path: string): { path: string; plane?: 'console' | 'machine' }[] {
  // Trailing slashes cut by a scan: /\/+$/ retries from every slash of a run that does not end the
  // path, quadratic in an unauthenticated request's URL (15,000 slashes took about 100 ms).
  let end = path.length;
  if (end > 1) while (end > 0 && path.charCodeAt(end - 1) === 0x2f) end--;
  const trimmed = path.slice(0, end);
  const versioned = /^\/v1(\/|$)/i.test(trimmed) ? trimmed.replace(/^\/v1/i, '/v1') : `/v1${trimmed}`;
  const out: { path: string; plane?: 'console' | 'machine' }[] = [{ path: trimmed }, { path: versioned }];
  if (versioned.startsWith(MACHINE)) out.push({ path: CONSOLE + versioned.slice(MACHINE.length), plane: 'console' });
  if (versioned.startsWith(CONSOLE)) out.push({ path: MACHINE + versioned.slice(CONSOLE.length), plane: 'machine' });
  return out.filter((c) => c.path !== path);
}

/**
 * `; did you mean POST /v1/authorize?` for a request `method path` no route holds, when one of its
 * respellings is a route taking that method; empty otherwise. Nothing is suggested from a path's
 * parameters: the respelling keeps them as sent.
 */
export function nearRouteHint(routes: Pick<RouteTable, 'of'>, method: string, path: string): string {
  const asked = method === 'HEAD' ? 'GET' : method;
  for (const candidate of respellings(path)) {
    if (!routes.of(candidate.path)?.methods.has(asked)) continue;
    const plane = candidate.plane === 'console' ? ' (a console route: it takes the session cookie of a sign-in, not an API key)'
      : candidate.plane === 'machine' ? ' (a machine route: it takes an API key, authorization: Bearer <API key>)' : '';
    return `; did you mean ${method} ${candidate.path}?${plane}`;
  }
  return '';
}
