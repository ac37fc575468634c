// Every route group of the service, by plane, registered in this order. One line per capability.
import type { FastifyPluginAsync } from 'fastify';
import { systemRoutes } from './system/routes.ts';
import { consoleAuthRoutes } from './console/auth.ts';
import { consoleProjectRoutes } from './console/projects.ts';
import { consoleMemberRoutes } from './console/members.ts';
import { consoleApiKeyRoutes } from './console/api-keys.ts';
import { machineIdentityRoutes } from './machine/identity.ts';
import { authorizeRoutes } from './machine/authorize.ts';
import { machineAgentRoutes } from './machine/agents.ts';
import { consoleAgentRoutes } from './console/agents.ts';
import { consolePermitRoutes } from './console/permits.ts';
import { policyMachineRoutes } from './machine/policy.ts';
import { consolePolicyRoutes } from './console/policy.ts';
import { machineApprovalRoutes } from './machine/approvals.ts';
import { consoleApprovalRoutes } from './console/approvals.ts';
import { machineExecutionRoutes } from './machine/executions.ts';
import { consoleExecutionRoutes } from './console/executions.ts';
import { machineAuditRoutes } from './machine/audit.ts';
import { consoleAuditRoutes } from './console/audit.ts';

/** Routes that use no cookies: system, and the machine plane (API keys). */
export const routeGroups: FastifyPluginAsync[] = [
  systemRoutes,
  machineIdentityRoutes,
  authorizeRoutes,
  machineAgentRoutes,
  policyMachineRoutes,
  machineApprovalRoutes,
  machineExecutionRoutes,
  machineAuditRoutes,
];

/** The console plane: session cookies (registered in a context of their own, app.ts). */
export const consoleRouteGroups: FastifyPluginAsync[] = [
  consoleAuthRoutes,
  consoleProjectRoutes,
  consoleMemberRoutes,
  consoleApiKeyRoutes,
  consoleAgentRoutes,
  consolePermitRoutes,
  consolePolicyRoutes,
  consoleApprovalRoutes,
  consoleExecutionRoutes,
  consoleAuditRoutes,
];
