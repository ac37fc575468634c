// A second project in the test service's database, with one member holding `roles` and an API key
// carrying them: no route creates a project (an installation has one, decision 0405), so tests of
// isolation between projects write it directly.
import type { Role } from '../../src/domain/access/roles.ts';
import { newId } from '../../src/lib/ids.ts';
import { mintApiKey } from '../../src/services/identity/api-keys.ts';
import type { Store } from '../../src/store/store.ts';
import { newMember, type TestService } from './service.ts';

export async function anotherProject(store: Store, roles: readonly Role[], kind: 'person' | 'service' = 'person'): Promise<{ projectId: string; principalId: string; secret: string }> {
  const projectId = newId('prj');
  const principalId = newId('prn');
  // A second in the past: the key is never older than the grants of its roles.
  const at = new Date(Date.now() - 1000).toISOString();
  const secret = await store.transaction(async (trx) => {
    await trx.insertInto('projects').values({ id: projectId, name: 'other', created_at: at }).execute();
    await trx.insertInto('principals').values({ id: principalId, kind, name: `${kind}-${principalId}`, password_hash: null, created_at: at, disabled_at: null }).execute();
    await trx.insertInto('memberships').values({ project_id: projectId, principal_id: principalId, created_at: at, created_by: null, revoked_at: null }).execute();
    for (const role of roles) await trx.insertInto('role_grants').values({ project_id: projectId, principal_id: principalId, role, granted_at: at, granted_by: null }).execute();
    return (await mintApiKey(trx, { projectId, principalId, name: 'other', roles: [...roles], actor: 'system' })).secret;
  });
  return { projectId, principalId, secret };
}

/**
 * The test service seen from another project: `projectId`, `member` and `keyHeader` are that
 * project's, so fixtures written for the service's own project build their rows there.
 */
export function inProject(svc: TestService, projectId: string): TestService {
  const member: TestService['member'] = (roles, name, kind) => newMember(svc.ts.store, projectId, roles, name, kind);
  return { ...svc, projectId, member, async keyHeader(roles) { return { authorization: `Bearer ${(await member(roles)).key}` }; } };
}
