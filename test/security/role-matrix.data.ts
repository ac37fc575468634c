// The expected allow/deny table of every route, as data. One entry per route: add yours when you
// add a route (the completeness test lists every OpenAPI route without an entry).
//
// allowed: the roles that may call the route; 'any' means any caller the plane accepts (any key
// of the project, or any signed-in member / any signed-in person on routes without a project).
// example: builds the path parameters and a valid body for one call by an allowed caller; it is
// called once per cell, so it should create whatever the call consumes (a fresh member, a key...).
// An allowed caller must get a 2xx; a denied one 403 `forbidden`.
import type { Role } from '../../src/domain/access/roles.ts';

export interface MatrixContext {
  projectId: string;
  /** A fresh member of the project (a service principal) holding `roles`. */
  newMember(roles: Role[]): Promise<string>;
  /** A fresh registered person who is not a member of any project. */
  newPerson(): Promise<{ principalId: string; name: string }>;
  /** The id of a fresh live API key of the project. */
  newKeyId(): Promise<string>;
  /** The id of an audit event of the project covered by a checkpoint (a proof is ready). */
  auditEventId(): Promise<string>;
  /** A name nobody has used. */
  uniqueName(prefix: string): string;
}

export interface RouteExample { params?: Record<string, string>; body?: unknown; /** Query string without '?'. */ query?: string }

export interface RouteEntry {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI form: `/v1/console/projects/{projectId}/members`. */
  path: string;
  plane: 'machine' | 'console';
  allowed: readonly Role[] | 'any';
  example?: (ctx: MatrixContext) => Promise<RouteExample> | RouteExample;
  /** The call ends the caller's session (logout): each cell gets a session of its own. */
  endsSession?: boolean;
}

const C = '/v1/console/projects/{projectId}';
const M = '/v1/projects/{projectId}';
const READERS: Role[] = ['ADMIN', 'AUDITOR'];

/** Routes anyone may call without credentials; not in the matrix. */
export const PUBLIC_ROUTES = ['GET /healthz', 'GET /readyz', 'GET /openapi.json', 'POST /v1/console/login', 'POST /v1/console/register'];

export const ROUTES: RouteEntry[] = [
  // identity (issue 3)
  { method: 'POST', path: '/v1/console/logout', plane: 'console', allowed: 'any', endsSession: true, example: () => ({ body: {} }) },
  { method: 'GET', path: '/v1/console/projects', plane: 'console', allowed: 'any' },
  { method: 'GET', path: `${C}/me`, plane: 'console', allowed: 'any' },
  { method: 'GET', path: `${C}/dashboard`, plane: 'console', allowed: 'any' },
  { method: 'GET', path: `${C}/settings`, plane: 'console', allowed: READERS },
  { method: 'GET', path: `${C}/control-plane`, plane: 'console', allowed: READERS },
  { method: 'GET', path: `${C}/members`, plane: 'console', allowed: READERS },
  { method: 'GET', path: `${C}/memberships`, plane: 'console', allowed: READERS },
  {
    method: 'POST', path: `${C}/members`, plane: 'console', allowed: ['ADMIN'],
    example: async (ctx) => ({ body: { name: (await ctx.newPerson()).name, roles: ['AUDITOR'] } }),
  },
  {
    method: 'POST', path: `${C}/members/{principalId}/revoke`, plane: 'console', allowed: ['ADMIN'],
    example: async (ctx) => ({ params: { principalId: await ctx.newMember(['APPROVER']) }, body: {} }),
  },
  {
    method: 'POST', path: `${C}/members/{principalId}/roles`, plane: 'console', allowed: ['ADMIN'],
    example: async (ctx) => ({ params: { principalId: await ctx.newMember([]) }, body: { role: 'APPROVER' } }),
  },
  {
    method: 'POST', path: `${C}/members/{principalId}/roles/{role}/revoke`, plane: 'console', allowed: ['ADMIN'],
    example: async (ctx) => ({ params: { principalId: await ctx.newMember(['AUDITOR']), role: 'AUDITOR' }, body: {} }),
  },
  { method: 'GET', path: `${C}/api-keys`, plane: 'console', allowed: READERS },
  {
    method: 'POST', path: `${C}/api-keys`, plane: 'console', allowed: ['ADMIN'],
    example: async (ctx) => ({ body: { name: 'matrix', roles: ['AUDITOR'], principal_id: await ctx.newMember(['AUDITOR']) } }),
  },
  {
    method: 'POST', path: `${C}/api-keys/{keyId}/revoke`, plane: 'console', allowed: ['ADMIN'],
    example: async (ctx) => ({ params: { keyId: await ctx.newKeyId() }, body: {} }),
  },
  {
    method: 'POST', path: `${M}/principals`, plane: 'machine', allowed: ['ADMIN'],
    example: (ctx) => ({ body: { kind: 'service', name: ctx.uniqueName('svc'), roles: ['APPROVER'] } }),
  },
  { method: 'GET', path: `${M}/sod`, plane: 'machine', allowed: ['ADMIN', 'AUDITOR', 'POLICY_AUTHOR'] },
  {
    method: 'PUT', path: `${M}/sod`, plane: 'machine', allowed: ['ADMIN'],
    example: () => ({ body: { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: false } }),
  },
  // audit log (issue 8)
  {
    method: 'GET', path: `${M}/audit/{auditId}/proof`, plane: 'machine', allowed: 'any',
    example: async (ctx) => ({ params: { auditId: await ctx.auditEventId() } }),
  },
  { method: 'GET', path: `${M}/audit/consistency`, plane: 'machine', allowed: 'any', example: () => ({ query: 'from=0&to=0' }) },
  { method: 'GET', path: `${M}/audit/log`, plane: 'machine', allowed: 'any' },
  { method: 'GET', path: `${M}/audit`, plane: 'machine', allowed: READERS },
  { method: 'GET', path: `${C}/audit`, plane: 'console', allowed: READERS },
  {
    method: 'POST', path: `${C}/proofs/verify`, plane: 'console', allowed: READERS,
    example: async (ctx) => ({ body: { audit_event_id: await ctx.auditEventId() } }),
  },
];
