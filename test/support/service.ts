// A real Gavel service on a test store, driven through Fastify's inject (no socket needed).
import { loadConfig, type Config } from '../../src/config/config.ts';
import { createService, type Service, type ServiceOptions } from '../../src/service.ts';
import { newId } from '../../src/lib/ids.ts';
import type { Role } from '../../src/domain/access/roles.ts';
import { mintApiKey } from '../../src/services/identity/api-keys.ts';
import type { Store } from '../../src/store/store.ts';
import type { Backend, TestStore } from './backends.ts';
import { answerChecks, type SentProblem } from './declared-problems.ts';

export interface TestService extends Service {
  ts: TestStore;
  projectId: string;
  /** A new member of the project holding `roles` (a service principal unless `kind` says person), with an API key carrying them. */
  member(roles: Role[], name?: string, kind?: 'person' | 'service'): Promise<{ principalId: string; key: string; keyId: string }>;
  /** `authorization` header for a fresh key with `roles`. */
  keyHeader(roles: Role[]): Promise<{ authorization: string }>;
  /** Every problem+json answer a route has sent so far (test/support/declared-problems.ts). */
  problems: SentProblem[];
  /** Stops the service; throws if a route sent an answer its OpenAPI operation does not declare, or a body its response schema does not admit. */
  stop(): Promise<void>;
}

/** A new member of `projectId` holding `roles`, with an API key carrying them (TestService.member). */
export async function newMember(store: Store, projectId: string, roles: Role[], name?: string, kind: 'person' | 'service' = 'service'): Promise<{ principalId: string; key: string; keyId: string }> {
  const principalId = newId('prn');
  const at = new Date().toISOString();
  return store.transaction(async (trx) => {
    await trx.insertInto('principals').values({ id: principalId, kind, name: name ?? `${kind === 'service' ? 'svc' : 'person'}-${principalId}`, password_hash: null, created_at: at, disabled_at: null }).execute();
    await trx.insertInto('memberships').values({ project_id: projectId, principal_id: principalId, created_at: at, created_by: null, revoked_at: null }).execute();
    for (const role of roles) {
      await trx.insertInto('role_grants').values({ project_id: projectId, principal_id: principalId, role, granted_at: at, granted_by: null }).execute();
    }
    const key = await mintApiKey(trx, { projectId, principalId, name: 'test', roles, actor: 'system' });
    return { principalId, key: key.secret, keyId: key.id };
  });
}

/** createService with a test service's answer checks: its close() throws, once closed, as stop() does. */
export async function checkedService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const service = await createService(config, options);
  const { failures } = answerChecks(service.app);
  return {
    ...service,
    async close() {
      const failed = failures();
      await service.close();
      if (failed !== undefined) throw new Error(failed);
    },
  };
}

/**
 * `prepare` runs on the opened store before the service starts and may return more configuration
 * (e.g. the audit-log tests start a witness that must know the log's key first).
 */
export async function startService(backend: Backend, overrides: Partial<Config> = {}, prepare?: (ts: TestStore) => Promise<Partial<Config>>, options: Pick<ServiceOptions, 'writerExecArgv' | 'clock' | 'logger'> = {}): Promise<TestService> {
  const ts = await backend.open();
  const extra = prepare ? await prepare(ts) : {};
  const config = loadConfig({}, { dataDir: ts.dataDir, logLevel: 'silent', ...overrides, ...extra });
  const service = await createService(config, { ...options, store: ts.store, logger: options.logger ?? (process.env.GAVEL_TEST_LOG ? { level: 'error' } as never : false) });
  const projectId = service.bootstrap.projectId;
  const { problems, failures } = answerChecks(service.app);
  const member: TestService['member'] = (roles, name, kind) => newMember(ts.store, projectId, roles, name, kind);
  return {
    ...service, ts, projectId, member, problems,
    async keyHeader(roles) { return { authorization: `Bearer ${(await member(roles)).key}` }; },
    async stop() {
      const failed = failures();
      await service.close();
      await ts.cleanup();
      if (failed !== undefined) throw new Error(failed);
    },
  };
}
