// The console twins of the policy lifecycle routes: the same handlers behind a session
// (consoleAuth checks the session, CSRF on writes, membership and roles).
import type { FastifyInstance } from 'fastify';
import { consoleAuth } from '../auth/session.ts';
import { registerPolicyRoutes } from '../machine/policy.ts';

export async function consolePolicyRoutes(app: FastifyInstance): Promise<void> {
  await registerPolicyRoutes(app, { base: '/v1/console/projects/:projectId/policy', authenticate: consoleAuth, auth: 'session', tags: ['console', 'policy'], security: [{ session: [] }] });
}
