// Every route group of the service, registered in this order. One line per capability.
import type { FastifyPluginAsync } from 'fastify';
import { systemRoutes } from './system/routes.ts';
import { policyMachineRoutes } from './machine/policy.ts';

export const routeGroups: FastifyPluginAsync[] = [
  systemRoutes,
  policyMachineRoutes,
];
