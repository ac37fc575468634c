// A realistic project for HTTP benchmarks: a 20-rule policy (8 action-and-amount permits, 6 agent
// denies, 6 resource-pattern-and-time-window permits), one agent with a permit, one API key.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { scratchDir } from './scratch-dir.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createService } from '../../src/service.ts';
import { openStore, type StoreOptions } from '../../src/store/store.ts';
import { mintApiKey } from '../../src/services/identity/api-keys.ts';
import { newId } from '../../src/lib/ids.ts';
import { recordIssuedPermit, signRootPermit } from '../../src/services/permits/permits.ts';
import { newAgent } from '../../test/support/authorize.ts';
import pg from 'pg';

export function policy20() {
  const rules: unknown[] = [];
  const actions = ['pay', 'refund', 'transfer', 'quote', 'book', 'cancel', 'subscribe', 'tip'];
  for (const [i, action] of actions.entries()) {
    rules.push({ id: `amount-${action}`, effect: 'ALLOW', when: { op: 'and', args: [
      { op: 'eq', input: 'action', value: action },
      { op: 'lte', input: 'amount.minor', value: 10_000 * (i + 1), currency: 'EUR' },
    ] } });
  }
  for (let i = 0; i < 6; i++) {
    rules.push({ id: `deny-agent-${i}`, effect: 'DENY', when: { op: 'eq', input: 'agent', value: `did:example:blocked-${i}` } });
  }
  for (let i = 0; i < 6; i++) {
    rules.push({ id: `window-${i}`, effect: 'ALLOW', when: { op: 'and', args: [
      { op: 'matches_resource', input: 'resource', value: `resource://zone-${i}/*` },
      { op: 'within_time_window', input: 'request_time', from: '2020-01-01T00:00:00Z', until: '2100-01-01T00:00:00Z' },
    ] } });
  }
  return { spec_version: '1', rules };
}

export interface Project { dataDir: string; databaseUrl: string | undefined; key: string; body: string }

/** Prepares a data directory (and database) a `gavel serve` process can then run on. */
export async function prepareProject(storeOptions?: StoreOptions & { publicUrl?: string }): Promise<Project> {
  const dataDir = scratchDir('gavel-bench-');
  const options: StoreOptions = storeOptions ?? { kind: 'sqlite', file: join(dataDir, 'gavel.db') };
  const store = openStore(options);
  const config = loadConfig({}, { dataDir, logLevel: 'silent' });
  const service = await createService(config, { store, logger: false });
  const projectId = service.bootstrap.projectId;
  const principalId = newId('prn');
  const at = new Date().toISOString();
  const key = await store.transaction(async (trx) => {
    await trx.insertInto('principals').values({ id: principalId, kind: 'service', name: 'bench', password_hash: null, created_at: at, disabled_at: null }).execute();
    await trx.insertInto('memberships').values({ project_id: projectId, principal_id: principalId, created_at: at, created_by: null, revoked_at: null }).execute();
    await trx.insertInto('role_grants').values({ project_id: projectId, principal_id: principalId, role: 'POLICY_AUTHOR', granted_at: at, granted_by: null }).execute();
    return mintApiKey(trx, { projectId, principalId, name: 'bench', roles: ['POLICY_AUTHOR'], actor: 'system' });
  });
  const headers = { authorization: `Bearer ${key.secret}` };
  const saved = await service.app.inject({ method: 'PUT', url: `/v1/projects/${projectId}/policy`, headers, payload: { policy: policy20(), note: 'bench' } });
  if (saved.statusCode >= 300) throw new Error(`save policy: ${saved.body}`);
  const activated = await service.app.inject({ method: 'POST', url: `/v1/projects/${projectId}/policy/activate`, headers, payload: { version: saved.json().version } });
  if (activated.statusCode >= 300) throw new Error(`activate policy: ${activated.body}`);
  const agent = newAgent();
  const now = new Date();
  const input = { projectId, agent: agent.did, constraints: { actions: ['pay', 'quote'], resources: ['resource://shop/*', 'resource://zone-1/*'] }, actor: 'system', now, expiresAt: new Date(now.getTime() + 86_400_000) };
  const jws = await signRootPermit(service.deps.signer, input);
  await store.transaction((trx) => recordIssuedPermit(trx, input, jws));
  await service.close();
  await store.close();
  const body = JSON.stringify({ agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/basket-1', amount: { minor: 4_200, currency: 'EUR' } });
  let databaseUrl: string | undefined;
  if (options.kind === 'postgres') {
    const u = new URL(options.url);
    if (options.schema) u.searchParams.set('options', `-c search_path=${options.schema}`);
    databaseUrl = u.toString();
  }
  return { dataDir, databaseUrl, key: key.secret, body };
}

/** The load generator's options for POST /v1/authorize with the project's key and request, at `baseUrl`. */
export function authorizeRequest(baseUrl: string, project: Project, serverPid?: number) {
  return {
    url: `${baseUrl}/v1/authorize`, method: 'POST' as const, body: project.body, serverPid,
    headers: { authorization: `Bearer ${project.key}`, 'content-type': 'application/json' },
  };
}

/**
 * A bench project in a PostgreSQL schema of its own (created here, dropped by `drop`), so a run
 * never meets another's tables.
 */
export async function preparePostgresProject(url: string): Promise<{ project: Project; drop(): Promise<void> }> {
  const schema = `gavel_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const drop = async () => { await admin.query(`drop schema ${schema} cascade`); await admin.end(); };
  try {
    return { project: await prepareProject({ kind: 'postgres', url, schema }), drop };
  } catch (error) {
    await drop();
    throw error;
  }
}
