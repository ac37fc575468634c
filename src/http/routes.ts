// Every route group of the service, registered in this order. One line per capability.
import type { FastifyPluginAsync } from 'fastify';
import { systemRoutes } from './system/routes.ts';
import { authorizeRoutes } from './machine/authorize.ts';
import { machineAgentRoutes } from './machine/agents.ts';

export const routeGroups: FastifyPluginAsync[] = [
  systemRoutes,
  authorizeRoutes,
  machineAgentRoutes,
];
