// Every route group of the service, registered in this order. One line per capability.
import type { FastifyPluginAsync } from 'fastify';
import { systemRoutes } from './system/routes.ts';
import { consoleAuthRoutes } from './console/auth.ts';
import { consoleProjectRoutes } from './console/projects.ts';
import { consoleMemberRoutes } from './console/members.ts';
import { consoleApiKeyRoutes } from './console/api-keys.ts';
import { machineIdentityRoutes } from './machine/identity.ts';
import { machineAuditRoutes } from './machine/audit.ts';
import { consoleAuditRoutes } from './console/audit.ts';

export const routeGroups: FastifyPluginAsync[] = [
  systemRoutes,
  consoleAuthRoutes,
  consoleProjectRoutes,
  consoleMemberRoutes,
  consoleApiKeyRoutes,
  machineIdentityRoutes,
  machineAuditRoutes,
  consoleAuditRoutes,
];
