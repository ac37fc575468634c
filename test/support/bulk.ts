// Many rows at once, written straight into the store: scale tests need a project with more members,
// keys or sessions than one SQL statement may bind (SQLite 32,766 variables, PostgreSQL 65,535),
// which the routes would take minutes to build one request at a time.
import { randomBytes } from 'node:crypto';
import type { Role } from '../../src/domain/access/roles.ts';
import { newId } from '../../src/lib/ids.ts';
import type { Store } from '../../src/store/store.ts';

/** More than PostgreSQL binds in one statement, so more than either engine does. */
export const MORE_THAN_ONE_STATEMENT_BINDS = 66_000;

/** Rows per insert: a few thousand bound values, well under either engine's limit. */
const BATCH = 500;

async function inBatches<T>(rows: T[], write: (batch: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) await write(rows.slice(i, i + BATCH));
}

/** `n` service principals, members of `projectId` holding `roles`; answers their ids. */
export async function seedMembers(store: Store, projectId: string, n: number, roles: readonly Role[] = []): Promise<string[]> {
  const at = new Date(Date.now() - 60_000).toISOString();
  const ids = Array.from({ length: n }, () => newId('prn'));
  await store.transaction(async (trx) => {
    await inBatches(ids, (b) => trx.insertInto('principals').values(b.map((id) => ({ id, kind: 'service' as const, name: `bulk-${id}`, password_hash: null, created_at: at, disabled_at: null }))).execute());
    await inBatches(ids, (b) => trx.insertInto('memberships').values(b.map((id) => ({ project_id: projectId, principal_id: id, created_at: at, created_by: null, revoked_at: null }))).execute());
    for (const role of roles) {
      await inBatches(ids, (b) => trx.insertInto('role_grants').values(b.map((id) => ({ project_id: projectId, principal_id: id, role, granted_at: at, granted_by: null }))).execute());
    }
  });
  return ids;
}

/** One API key of `projectId` for each of `holders`, minted by `mintedBy`; answers their ids. */
export async function seedKeys(store: Store, projectId: string, holders: readonly string[], mintedBy: string, options: { revoked?: boolean } = {}): Promise<string[]> {
  const at = new Date(Date.now() - 60_000).toISOString();
  const rows = holders.map((principal_id) => ({
    id: newId('key'), project_id: projectId, principal_id, name: 'bulk', secret_hash: randomBytes(32).toString('hex'), roles: '[]',
    created_at: at, created_by: mintedBy, revoked_at: options.revoked ? at : null, revoked_by: options.revoked ? mintedBy : null,
  }));
  await store.transaction((trx) => inBatches(rows, (b) => trx.insertInto('api_keys').values(b).execute()));
  return rows.map((r) => r.id);
}
