// States in the OpenAPI document which roles may call each operation (`x-roles`, and a "Roles:"
// line in its description), read off the route's own auth hook (consoleAuth, machineAuth expose
// `requiredRoles`), so the document follows the code instead of a hand-kept copy.
import type { RouteOptions } from 'fastify';

type Hook = ((...args: never[]) => unknown) & { requiredRoles?: readonly string[] };

/** The roles demanded by the route's auth hook, or undefined when no hook states any. */
function guardRoles(route: RouteOptions): readonly string[] | undefined {
  for (const name of ['onRequest', 'preParsing', 'preValidation', 'preHandler'] as const) {
    const hooks = route[name] as Hook | Hook[] | undefined;
    for (const hook of Array.isArray(hooks) ? hooks : hooks ? [hooks] : []) {
      if (Array.isArray(hook.requiredRoles)) return hook.requiredRoles;
    }
  }
  return undefined;
}

/** onRoute hook: register it before the routes. */
export function documentRoles(route: RouteOptions): void {
  const roles = guardRoles(route);
  if (!roles || !route.schema) return;
  const onConsole = route.url.startsWith('/v1/console/');
  const anyone = route.url.includes(':projectId')
    ? (onConsole ? 'any member of the project' : 'any API key of the project')
    : (onConsole ? 'any signed-in person' : 'any valid API key');
  const line = roles.length > 0
    ? `Roles: ${roles.join(', ')}${roles.length > 1 ? ' (any one of them)' : ''}.`
    : `Roles: ${anyone}, unless the summary says otherwise.`;
  const schema = route.schema as { description?: string };
  // A new schema object: a GET's schema is shared with its HEAD route, which passes here too.
  route.schema = { ...route.schema, 'x-roles': [...roles], description: schema.description ? `${schema.description}\n\n${line}` : line } as RouteOptions['schema'];
}
