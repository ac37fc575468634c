// First start: one project and one administrator whose one-time password is returned once, to be
// printed once. Later starts find the `bootstrapped` setting and do nothing.
import { newId } from '../lib/ids.ts';
import { hashPassword, newPassword } from '../lib/passwords.ts';
import { lockFor, type Db, type Store, type Tx } from '../store/store.ts';
import { recordAudit } from './audit/record.ts';

export interface BootstrapResult {
  projectId: string;
  /** Present only on the start that created the administrator. */
  admin?: { name: string; password: string };
}

export const BOOTSTRAP_ADMIN = 'admin';

/**
 * The project whose audit log takes what belongs to no project: a self-registration, a sign-in of a
 * person who is a member of none (decision 0201, addendum). An installation has this one project
 * (no route creates another), so its ADMIN and AUDITOR are the installation's.
 */
export async function installationProject(db: Db | Tx): Promise<string | undefined> {
  return (await db.selectFrom('settings').select('value').where('key', '=', 'bootstrap_project').executeTakeFirst())?.value;
}

/** Hands the administrator's password to the operator before the account is committed (see below). */
export type AnnounceAdmin = (admin: { name: string; password: string }) => void;

/**
 * `announce` runs inside the transaction, after the inserts and before the commit: a process killed
 * between the commit and its banner (start-up goes on for a few hundred ms after this) would leave an
 * account whose password was printed nowhere and is stored only as a hash. Announced first, a kill
 * before the commit leaves no account, and the next start creates one and announces it again.
 */
export async function bootstrap(store: Store, now = new Date(), announce?: AnnounceAdmin): Promise<BootstrapResult> {
  const done = await store.db.selectFrom('settings').select('value').where('key', '=', 'bootstrap_project').executeTakeFirst();
  if (done) return { projectId: done.value };

  const password = newPassword();
  const passwordHash = await hashPassword(password);
  return store.transaction(async (trx) => {
    // Another process may have bootstrapped between our read and our write lock.
    await lockFor(trx, store.dialect, 'bootstrap');
    const again = await trx.selectFrom('settings').select('value').where('key', '=', 'bootstrap_project').executeTakeFirst();
    if (again) return { projectId: again.value };
    const at = now.toISOString();
    const projectId = newId('prj');
    const adminId = newId('prn');
    await trx.insertInto('projects').values({ id: projectId, name: 'default', created_at: at }).execute();
    await trx.insertInto('principals').values({ id: adminId, kind: 'person', name: BOOTSTRAP_ADMIN, password_hash: passwordHash, created_at: at, disabled_at: null }).execute();
    await trx.insertInto('memberships').values({ project_id: projectId, principal_id: adminId, created_at: at, created_by: null, revoked_at: null }).execute();
    await trx.insertInto('role_grants').values({ project_id: projectId, principal_id: adminId, role: 'ADMIN', granted_at: at, granted_by: null }).execute();
    await trx.insertInto('settings').values({ key: 'bootstrap_project', value: projectId }).execute();
    await recordAudit(trx, { projectId, kind: 'project.bootstrapped', actor: 'system', data: { project_id: projectId, admin_principal_id: adminId }, at: now });
    const admin = { name: BOOTSTRAP_ADMIN, password };
    announce?.(admin);
    return { projectId, admin };
  });
}
