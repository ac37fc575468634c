// The expected allow/deny table of every route, as data. One entry per route: add yours when you
// add a route (the completeness test lists every OpenAPI route without an entry).
//
// allowed: the roles that may call the route; 'any' means any caller the plane accepts (any key
// of the project, or any signed-in member / any signed-in person on routes without a project).
// example: builds the path parameters and a valid body for one call by an allowed caller; it is
// called once per cell, so it should create whatever the call consumes (a fresh member, a key...).
// An allowed caller must get a 2xx; a denied one 403 `forbidden`.
// isolation: what a caller of another project gets for the same call (project-isolation.test.ts).
import type { Role } from '../../src/domain/access/roles.ts';
import type { Store } from '../../src/store/store.ts';
import { activatePolicyVersion } from '../../src/services/policy/activate.ts';
import { savePolicyVersion } from '../../src/services/policy/save.ts';
import type { TestService } from '../support/service.ts';
import { newApprover, SEEDED_OBLIGATION_AGENT, seedObligation } from '../support/approvals.ts';
import { getObligation, recordApproval } from '../../src/services/approvals/approvals.ts';

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
  /** A fresh agent DID (did:key), registered in the project. */
  newAgent(): Promise<string>;
  /** A fresh live permit of the project, issued to a fresh agent. */
  newPermit(): Promise<{ commitment: string; jws: string; agent: string }>;
  /** Freezes an agent directly in the store. */
  freeze(did: string): Promise<void>;
  /** The service's store, for examples that need state no route of the matrix creates. */
  store: Store;
  /** The running service, for examples that need real state (an obligation, an approval key). */
  service: TestService;
  /** The id of a fresh UNKNOWN execution of the project (something to resolve). */
  newUnknownExecution(): Promise<string>;
}

export interface RouteExample { params?: Record<string, string>; body?: unknown; /** Query string without the `?`. */ query?: string }

export interface RouteEntry {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI form: `/v1/console/projects/{projectId}/members`. */
  path: string;
  plane: 'machine' | 'console';
  allowed: readonly Role[] | 'any';
  example?: (ctx: MatrixContext) => Promise<RouteExample> | RouteExample;
  /** The call ends the caller's session (logout): each cell gets a session of its own. */
  endsSession?: boolean;
  /**
   * What a caller of project A gets from this route of A sent a call built in project B (B's ids in
   * the path, query and body): SCOPED when the call names nothing of B's, else the refusal; or
   * cases, each with its own call (`b`: B's context, `a`: A's, for a call mixing the two), `example`
   * built in B by default. Nothing of B's may change or show in the answer (project-isolation.test.ts).
   */
  isolation: IsolationExpectation | IsolationCase[];
}

/** `scoped`: a 2xx, acting on A alone. `body`: members the answer must hold as given. */
export type IsolationExpectation = 'scoped' | { status: number; code?: string; body?: Record<string, unknown> };
export interface IsolationCase { call?: (b: MatrixContext, a: MatrixContext) => Promise<RouteExample> | RouteExample; expect: IsolationExpectation }

const SCOPED = 'scoped';
const NOT_FOUND = { status: 404, code: 'not_found' };
const NOT_A_MEMBER = { status: 422, code: 'not_a_member' };
const NOT_FROZEN = { status: 409, code: 'agent_not_frozen' };
const VERSION_NOT_FOUND = { status: 404, code: 'policy_version_not_found' };
/** A's obligations of the agent B's obligation names (seedObligation names one agent in every project): A's alone. */
const OBLIGATIONS_OF_AGENT_OF_B: IsolationCase[] = [{
  call: async (b) => { await seedObligation(b.service); return { query: `agent=${encodeURIComponent(SEEDED_OBLIGATION_AGENT)}` }; },
  expect: SCOPED,
}];

const C = '/v1/console/projects/{projectId}';
const M = '/v1/projects/{projectId}';
const READERS: Role[] = ['ADMIN', 'AUDITOR'];
const ALL_ROLES: Role[] = ['ADMIN', 'AUDITOR', 'APPROVER', 'POLICY_AUTHOR', 'PERMIT_ISSUER'];

/** Routes anyone may call without credentials; not in the matrix. */
export const PUBLIC_ROUTES = ['GET /healthz', 'GET /readyz', 'GET /openapi.json', 'POST /v1/console/login', 'POST /v1/console/register'];

export const ROUTES: RouteEntry[] = [
  // identity (issue 3)
  { method: 'POST', path: '/v1/console/logout', plane: 'console', allowed: 'any', isolation: SCOPED, endsSession: true, example: () => ({ body: {} }) },
  { method: 'GET', path: '/v1/console/projects', plane: 'console', allowed: 'any', isolation: SCOPED },
  { method: 'GET', path: `${C}/me`, plane: 'console', allowed: 'any', isolation: SCOPED },
  { method: 'GET', path: `${C}/dashboard`, plane: 'console', allowed: 'any', isolation: SCOPED },
  { method: 'GET', path: `${C}/settings`, plane: 'console', allowed: READERS, isolation: SCOPED },
  { method: 'GET', path: `${C}/control-plane`, plane: 'console', allowed: READERS, isolation: SCOPED },
  { method: 'GET', path: `${C}/members`, plane: 'console', allowed: READERS, isolation: SCOPED },
  { method: 'GET', path: `${C}/memberships`, plane: 'console', allowed: READERS, isolation: SCOPED },
  {
    method: 'POST', path: `${C}/members`, plane: 'console', allowed: ['ADMIN'], isolation: SCOPED,
    example: async (ctx) => ({ body: { name: (await ctx.newPerson()).name, roles: ['AUDITOR'] } }),
  },
  // Principals are the installation's: one of B is not a member of A (422 not_a_member, as documented).
  {
    method: 'POST', path: `${C}/members/{principalId}/revoke`, plane: 'console', allowed: ['ADMIN'], isolation: NOT_A_MEMBER,
    example: async (ctx) => ({ params: { principalId: await ctx.newMember(['APPROVER']) }, body: {} }),
  },
  {
    method: 'POST', path: `${C}/members/{principalId}/roles`, plane: 'console', allowed: ['ADMIN'], isolation: NOT_A_MEMBER,
    example: async (ctx) => ({ params: { principalId: await ctx.newMember([]) }, body: { role: 'APPROVER' } }),
  },
  {
    method: 'POST', path: `${C}/members/{principalId}/roles/{role}/revoke`, plane: 'console', allowed: ['ADMIN'], isolation: NOT_A_MEMBER,
    example: async (ctx) => ({ params: { principalId: await ctx.newMember(['AUDITOR']), role: 'AUDITOR' }, body: {} }),
  },
  // Any member lists keys: ADMIN and AUDITOR every key, any other member its own (test/identity/access.test.ts).
  { method: 'GET', path: `${C}/api-keys`, plane: 'console', allowed: 'any', isolation: SCOPED },
  {
    method: 'POST', path: `${C}/api-keys`, plane: 'console', allowed: ['ADMIN'], isolation: NOT_A_MEMBER,
    example: async (ctx) => ({ body: { name: 'matrix', roles: ['AUDITOR'], principal_id: await ctx.newMember(['AUDITOR']) } }),
  },
  {
    method: 'POST', path: `${C}/api-keys/{keyId}/revoke`, plane: 'console', allowed: ['ADMIN'], isolation: NOT_FOUND,
    example: async (ctx) => ({ params: { keyId: await ctx.newKeyId() }, body: {} }),
  },
  {
    method: 'POST', path: `${M}/principals`, plane: 'machine', allowed: ['ADMIN'], isolation: SCOPED,
    example: (ctx) => ({ body: { kind: 'service', name: ctx.uniqueName('svc'), roles: ['APPROVER'] } }),
  },
  { method: 'GET', path: `${M}/sod`, plane: 'machine', allowed: ['ADMIN', 'AUDITOR', 'POLICY_AUTHOR'], isolation: SCOPED },
  {
    method: 'PUT', path: `${M}/sod`, plane: 'machine', allowed: ['ADMIN'],
    // A's caller holds every role, ADMIN and POLICY_AUTHOR among them: the conflicts named are A's members' alone.
    isolation: { status: 409, code: 'sod_conflict' },
    example: () => ({ body: { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: false } }),
  },
  // authorize, agents, permits (issue 5)
  {
    method: 'POST', path: '/v1/authorize', plane: 'machine', allowed: 'any', isolation: [
      // B's permit and agent, with A's key: its signature is not A's.
      { expect: { status: 200, body: { decision: 'DENY' } } },
      // A's own permit naming B's obligation: decided in A, B's obligation untouched.
      { call: async (b, a) => { const p = await a.newPermit(); return { body: { agent: p.agent, permit: p.jws, action: 'read', resource: 'resource://docs/a', approval_request_id: await seedObligation(b.service) } }; }, expect: { status: 200 } },
    ],
    example: async (ctx) => { const p = await ctx.newPermit(); return { body: { agent: p.agent, permit: p.jws, action: 'read', resource: 'resource://docs/a' } }; },
  },
  {
    method: 'GET', path: `${M}/agents/state`, plane: 'machine', allowed: 'any',
    // An agent frozen in B, asked of A: A's state of that DID (never frozen there).
    isolation: [{ call: async (b) => ({ query: `agent=${encodeURIComponent(await frozenAgent(b))}` }), expect: { status: 200, body: { frozen: false, frozen_by: null } } }],
    example: async (ctx) => ({ query: `agent=${encodeURIComponent(await ctx.newAgent())}` }),
  },
  { method: 'POST', path: `${M}/agents/freeze`, plane: 'machine', allowed: 'any', isolation: SCOPED, example: async (ctx) => ({ body: { agent: await ctx.newAgent(), reason: 'matrix' } }) },
  { method: 'POST', path: `${M}/agents/release`, plane: 'machine', allowed: ['ADMIN', 'PERMIT_ISSUER'], isolation: NOT_FROZEN, example: async (ctx) => ({ body: { agent: await frozenAgent(ctx) } }) },
  { method: 'POST', path: `${C}/agents`, plane: 'console', allowed: ['ADMIN', 'PERMIT_ISSUER'], isolation: SCOPED, example: async (ctx) => ({ body: { did: unregisteredDid(ctx), name: 'matrix' } }) },
  { method: 'GET', path: `${C}/agents`, plane: 'console', allowed: ALL_ROLES, isolation: SCOPED },
  { method: 'GET', path: `${C}/agents/{agentDid}`, plane: 'console', allowed: ALL_ROLES, isolation: NOT_FOUND, example: async (ctx) => ({ params: { agentDid: await ctx.newAgent() } }) },
  { method: 'POST', path: `${C}/agents/freeze`, plane: 'console', allowed: ['ADMIN', 'PERMIT_ISSUER', 'APPROVER'], isolation: SCOPED, example: async (ctx) => ({ body: { agent: await ctx.newAgent() } }) },
  { method: 'POST', path: `${C}/agents/release`, plane: 'console', allowed: ['ADMIN', 'PERMIT_ISSUER'], isolation: NOT_FROZEN, example: async (ctx) => ({ body: { agent: await frozenAgent(ctx) } }) },
  {
    method: 'POST', path: `${C}/permits`, plane: 'console', allowed: ['PERMIT_ISSUER'], isolation: SCOPED,
    example: async (ctx) => ({ body: { agent: await ctx.newAgent(), actions: ['read'], resources: ['resource://docs/*'], expires_at: new Date(Date.now() + 3_600_000).toISOString() } }),
  },
  {
    method: 'GET', path: `${C}/permits`, plane: 'console', allowed: ['PERMIT_ISSUER', 'ADMIN', 'AUDITOR'],
    // Filtered by the agent of a permit of B: A issued it none.
    isolation: [{ call: async (b) => ({ query: `agent=${encodeURIComponent((await b.newPermit()).agent)}` }), expect: { status: 200, body: { permits: [] } } }],
  },
  { method: 'GET', path: `${C}/permits/{commitment}`, plane: 'console', allowed: ['PERMIT_ISSUER', 'ADMIN', 'AUDITOR'], isolation: NOT_FOUND, example: async (ctx) => ({ params: { commitment: (await ctx.newPermit()).commitment } }) },
  {
    method: 'POST', path: `${C}/permits/{commitment}/revoke`, plane: 'console', allowed: ['PERMIT_ISSUER', 'ADMIN'],
    // B's chain sent to revoke its link: it must verify with A's key to be recorded in A.
    isolation: [{ expect: NOT_FOUND }, { call: async (b) => { const p = await b.newPermit(); return { params: { commitment: p.commitment }, body: { permit: p.jws } }; }, expect: { status: 422, code: 'permit_invalid' } }],
    example: async (ctx) => ({ params: { commitment: (await ctx.newPermit()).commitment }, body: {} }),
  },
  // policy lifecycle (issue 4)
  { method: 'PUT', path: `${M}/policy`, plane: 'machine', allowed: ['POLICY_AUTHOR'], isolation: SCOPED, example: () => ({ body: { policy: MATRIX_POLICY, note: 'matrix' } }) },
  { method: 'GET', path: `${M}/policy`, plane: 'machine', allowed: 'any', isolation: SCOPED, example: async (ctx) => { await ensureActivePolicy(ctx); return {}; } },
  { method: 'GET', path: `${M}/policy/versions`, plane: 'machine', allowed: 'any', isolation: SCOPED },
  {
    method: 'POST', path: `${M}/policy/activate`, plane: 'machine', allowed: ['POLICY_AUTHOR'], isolation: VERSION_NOT_FOUND,
    example: async (ctx) => ({ body: { version: (await saveMatrixPolicy(ctx)).version } }),
  },
  {
    method: 'POST', path: `${M}/policy/simulate`, plane: 'machine', allowed: ['POLICY_AUTHOR', 'ADMIN', 'AUDITOR'], isolation: SCOPED,
    example: () => ({ body: { request: { agent: 'did:key:z6Mkmatrix', action: 'read' }, policy: MATRIX_POLICY } }),
  },
  {
    method: 'POST', path: `${M}/policy/replay`, plane: 'machine', allowed: ['POLICY_AUTHOR', 'ADMIN', 'AUDITOR'], isolation: [{ call: foreignVersionReplay, expect: VERSION_NOT_FOUND }],
    example: () => ({ body: { policy: MATRIX_POLICY, last: 10 } }),
  },
  // policy lifecycle, console twins
  { method: 'PUT', path: `${C}/policy`, plane: 'console', allowed: ['POLICY_AUTHOR'], isolation: SCOPED, example: () => ({ body: { policy: MATRIX_POLICY, note: 'matrix' } }) },
  { method: 'GET', path: `${C}/policy`, plane: 'console', allowed: 'any', isolation: SCOPED, example: async (ctx) => { await ensureActivePolicy(ctx); return {}; } },
  { method: 'GET', path: `${C}/policy/versions`, plane: 'console', allowed: 'any', isolation: SCOPED },
  {
    method: 'POST', path: `${C}/policy/activate`, plane: 'console', allowed: ['POLICY_AUTHOR'], isolation: VERSION_NOT_FOUND,
    example: async (ctx) => ({ body: { version: (await saveMatrixPolicy(ctx)).version } }),
  },
  {
    method: 'POST', path: `${C}/policy/simulate`, plane: 'console', allowed: ['POLICY_AUTHOR', 'ADMIN', 'AUDITOR'], isolation: SCOPED,
    example: () => ({ body: { request: { agent: 'did:key:z6Mkmatrix', action: 'read' }, policy: MATRIX_POLICY } }),
  },
  {
    method: 'POST', path: `${C}/policy/replay`, plane: 'console', allowed: ['POLICY_AUTHOR', 'ADMIN', 'AUDITOR'], isolation: [{ call: foreignVersionReplay, expect: VERSION_NOT_FOUND }],
    example: () => ({ body: { policy: MATRIX_POLICY, last: 10 } }),
  },
  // approvals (issue 7): machine routes take any key (the signature is the approver's credential)
  { method: 'GET', path: `${M}/approvals`, plane: 'machine', allowed: 'any', isolation: OBLIGATIONS_OF_AGENT_OF_B },
  {
    method: 'POST', path: `${M}/approvals`, plane: 'machine', allowed: 'any', isolation: [{ expect: NOT_FOUND }, { call: signedByKeyOfB, expect: { status: 422, code: 'approval_key_unknown' } }],
    example: async (ctx) => {
      const id = await seedObligation(ctx.service);
      const who = await newApprover(ctx.service);
      const { statement } = await getObligation(ctx.service.deps.store.db, ctx.projectId, id, new Date());
      return { body: { approval_request_id: id, key_id: who.keyId, signature: who.sign(statement) } };
    },
  },
  {
    method: 'POST', path: `${M}/approvals/revoke`, plane: 'machine', allowed: 'any', isolation: NOT_FOUND,
    example: async (ctx) => {
      const id = await seedObligation(ctx.service);
      const who = await newApprover(ctx.service);
      const { statement } = await getObligation(ctx.service.deps.store.db, ctx.projectId, id, new Date());
      await recordApproval(ctx.service.deps.store, { projectId: ctx.projectId, approvalRequestId: id, keyId: who.keyId, signature: who.sign(statement), actor: 'system', caller: { principalId: 'system', readsApprovalKeys: true } }, new Date());
      return { body: { approval_request_id: id } };
    },
  },
  { method: 'GET', path: `${C}/approvals`, plane: 'console', allowed: ['ADMIN', 'AUDITOR', 'APPROVER'], isolation: OBLIGATIONS_OF_AGENT_OF_B },
  {
    method: 'GET', path: `${C}/approvals/{approvalId}`, plane: 'console', allowed: ['ADMIN', 'AUDITOR', 'APPROVER'], isolation: [{ expect: NOT_FOUND }, { call: async (b) => ({ params: { approvalId: await approvalIdOf(b) } }), expect: NOT_FOUND }],
    example: async (ctx) => ({ params: { approvalId: await seedObligation(ctx.service) } }),
  },
  // The principal itself may also read, register and retire its own keys (test/approvals/console.test.ts).
  {
    method: 'GET', path: `${C}/principals/{principalId}/approval-keys`, plane: 'console', allowed: READERS, isolation: NOT_FOUND,
    example: async (ctx) => ({ params: { principalId: await ctx.newMember(['APPROVER']) } }),
  },
  {
    // No role registers a key for someone else, ADMIN included: only the principal itself (decision 0502, addendum).
    method: 'POST', path: `${C}/principals/{principalId}/approval-keys`, plane: 'console', allowed: [], isolation: { status: 403, code: 'forbidden' },
    example: async (ctx) => {
      const { generateKeyPairSync } = await import('node:crypto');
      const x = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
      return { params: { principalId: await ctx.newMember(['APPROVER']) }, body: { public_key: x } };
    },
  },
  {
    method: 'POST', path: `${C}/approval-keys/{keyId}/retire`, plane: 'console', allowed: ['ADMIN'], isolation: NOT_FOUND,
    example: async (ctx) => ({ params: { keyId: (await newApprover(ctx.service)).keyId }, body: {} }),
  },
  // executions (issue 6)
  { method: 'GET', path: `${M}/executions`, plane: 'machine', allowed: 'any', isolation: SCOPED },
  {
    method: 'POST', path: `${M}/executions/resolve`, plane: 'machine', allowed: ['ADMIN'], isolation: NOT_FOUND,
    example: async (ctx) => ({ body: { execution_id: await ctx.newUnknownExecution(), outcome: 'FAILED', note: 'checked with the merchant' } }),
  },
  { method: 'GET', path: `${C}/executions`, plane: 'console', allowed: ['ADMIN', 'AUDITOR', 'APPROVER'], isolation: SCOPED },
  {
    method: 'POST', path: `${C}/executions/{executionId}/resolve`, plane: 'console', allowed: ['ADMIN'], isolation: NOT_FOUND,
    example: async (ctx) => ({ params: { executionId: await ctx.newUnknownExecution() }, body: { outcome: 'SUCCEEDED', note: 'checked with the merchant' } }),
  },
  // audit log (issue 8)
  {
    method: 'GET', path: `${M}/audit/{auditId}/proof`, plane: 'machine', allowed: 'any', isolation: NOT_FOUND,
    example: async (ctx) => ({ params: { auditId: await ctx.auditEventId() } }),
  },
  { method: 'GET', path: `${M}/audit/consistency`, plane: 'machine', allowed: 'any', isolation: SCOPED, example: () => ({ query: 'from=0&to=0' }) },
  { method: 'GET', path: `${M}/audit/log`, plane: 'machine', allowed: 'any', isolation: SCOPED },
  { method: 'GET', path: `${M}/audit`, plane: 'machine', allowed: READERS, isolation: SCOPED },
  { method: 'GET', path: `${C}/audit`, plane: 'console', allowed: READERS, isolation: SCOPED },
  {
    method: 'POST', path: `${C}/proofs/verify`, plane: 'console', allowed: READERS, isolation: NOT_FOUND,
    example: async (ctx) => ({ body: { audit_event_id: await ctx.auditEventId() } }),
  },
];


/** A DID with the shape of did:key that no test registers (the registration route must create it). */
function unregisteredDid(ctx: MatrixContext): string {
  return `did:example:${ctx.uniqueName('agent')}`;
}

async function frozenAgent(ctx: MatrixContext): Promise<string> {
  const did = await ctx.newAgent();
  await ctx.freeze(did);
  return did;
}

const MATRIX_POLICY = { spec_version: '1', rules: [{ id: 'reads', effect: 'ALLOW', when: { op: 'eq', input: 'action', value: 'read' } }] };

async function saveMatrixPolicy(ctx: MatrixContext) {
  const principalId = await ctx.newMember(['POLICY_AUTHOR']);
  return savePolicyVersion(ctx.store, { projectId: ctx.projectId, principalId, actor: 'system', document: MATRIX_POLICY, note: 'matrix', at: new Date() });
}

async function ensureActivePolicy(ctx: MatrixContext): Promise<void> {
  const active = await ctx.store.db.selectFrom('policy_active').select('version').where('project_id', '=', ctx.projectId).executeTakeFirst();
  if (active) return;
  const saved = await saveMatrixPolicy(ctx);
  const principalId = await ctx.newMember(['POLICY_AUTHOR']);
  await activatePolicyVersion(ctx.store, { projectId: ctx.projectId, principalId, actor: 'system', roles: new Set(['POLICY_AUTHOR']), version: saved.version, now: () => new Date() });
}

/** Replay of a version B saved (the isolation test gives B more versions than A ever has). */
async function foreignVersionReplay(b: MatrixContext): Promise<RouteExample> {
  return { body: { version: (await saveMatrixPolicy(b)).version, last: 10 } };
}

/** An approval of A's obligation signed with an approval key registered in B (by an APPROVER of B). */
async function signedByKeyOfB(b: MatrixContext, a: MatrixContext): Promise<RouteExample> {
  const id = await seedObligation(a.service);
  const who = await newApprover(b.service);
  const { statement } = await getObligation(a.store.db, a.projectId, id, new Date());
  return { body: { approval_request_id: id, key_id: who.keyId, signature: who.sign(statement) } };
}

/** The id (apv_) of a fresh approval recorded in the context's project. */
async function approvalIdOf(ctx: MatrixContext): Promise<string> {
  const id = await seedObligation(ctx.service);
  const who = await newApprover(ctx.service);
  const { statement } = await getObligation(ctx.store.db, ctx.projectId, id, new Date());
  const view = await recordApproval(ctx.store, { projectId: ctx.projectId, approvalRequestId: id, keyId: who.keyId, signature: who.sign(statement), actor: 'system', caller: { principalId: 'system', readsApprovalKeys: true } }, new Date());
  return view.approval!.id;
}
