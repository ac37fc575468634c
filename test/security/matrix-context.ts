// The MatrixContext of a project of the test service: what the route table's examples build their
// calls from. The role matrix builds them in the service's own project; the isolation test in
// another (inProject), to send them to the first.
import { randomBytes } from 'node:crypto';
import { newId } from '../../src/lib/ids.ts';
import { ensureAgent, freezeAgent } from '../../src/services/agents/agents.ts';
import { newAgent, issue } from '../support/authorize.ts';
import type { TestService } from '../support/service.ts';
import type { MatrixContext, RouteEntry, RouteExample } from './role-matrix.data.ts';

/** `personPassword`: the hash every person newPerson registers is given. */
export function matrixContext(svc: TestService, personPassword: string): MatrixContext {
  let n = 0;
  const ctx: MatrixContext = {
    projectId: svc.projectId,
    store: svc.ts.store,
    service: svc,
    uniqueName: (prefix) => `${prefix}-${Date.now().toString(36)}-${(n++).toString(36)}-${randomBytes(3).toString('hex')}`,
    newMember: async (roles) => (await svc.member(roles)).principalId,
    newPerson: async () => {
      const principalId = newId('prn');
      const name = ctx.uniqueName('person');
      await svc.ts.store.db.insertInto('principals').values({ id: principalId, kind: 'person', name, password_hash: personPassword, created_at: new Date().toISOString(), disabled_at: null }).execute();
      return { principalId, name };
    },
    newKeyId: async () => (await svc.member(['AUDITOR'])).keyId,
    newAgent: async () => {
      const did = newAgent().did;
      await svc.ts.store.transaction((trx) => ensureAgent(trx, svc.projectId, did, 'test', new Date().toISOString()));
      return did;
    },
    newPermit: async () => {
      const agent = newAgent().did;
      const p = await issue(svc, agent, { actions: ['read'], resources: ['resource://docs/*'] });
      return { ...p, agent };
    },
    freeze: async (did) => {
      await svc.ts.store.transaction((trx) => freezeAgent(trx, { projectId: svc.projectId, did, actor: 'test', reason: null, at: new Date().toISOString() }));
    },
    newUnknownExecution: async () => {
      const id = newId('exe');
      const at = new Date().toISOString();
      await svc.ts.store.db.insertInto('executions').values({
        id, project_id: svc.projectId, nonce: id, fingerprint: '0'.repeat(64), decision_id: newId('dec'), decision_audit_id: newId('aud'),
        policy_version: 1, agent: 'did:example:matrix', action: 'pay', resource: 'resource://shop/1', merchant: 'shop', operation: 'ok',
        status: 'UNKNOWN', note: 'matrix', http_status: null, instance_id: 'matrix', created_at: at, completed_at: at,
        resolved_at: null, resolved_by: null, resolution_note: null,
      }).execute();
      return id;
    },
    auditEventId: async () => {
      await svc.member([]);
      await svc.auditLog.tick({ force: true });
      const row = await svc.ts.store.db.selectFrom('audit_events').select('id').where('project_id', '=', svc.projectId).where('leaf_index', 'is not', null).orderBy('id', 'desc').executeTakeFirstOrThrow();
      return row.id;
    },
  };
  return ctx;
}

/** Calls route `e` of `projectId` with the example `ex` (path parameters, query, body) and `headers`. */
export function callRoute(svc: TestService, e: RouteEntry, projectId: string, ex: RouteExample, headers: Record<string, string>, extraQuery?: string) {
  const params: Record<string, string> = { projectId, ...(ex.params ?? {}) };
  const query = [ex.query, extraQuery].filter(Boolean).join('&');
  const url = e.path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k] ?? `missing-${k}`)) + (query ? `?${query}` : '');
  const hasBody = e.method !== 'GET' && e.method !== 'DELETE';
  return svc.app.inject({
    method: e.method, url,
    headers: { ...headers, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
    ...(hasBody ? { payload: JSON.stringify(ex.body ?? {}) } : {}),
  });
}
