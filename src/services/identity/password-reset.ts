// `gavel reset-password <name>`: the operator's recovery of a person's console password. No HTTP
// route changes a password (the spec has none): whoever holds the database is the one who may.
// One transaction: the new hash, every console session of the person ended, its account throttle
// counter cleared, and `principal.password_reset` in each of its projects. It runs beside a server
// on the same database: sessions are read from the database on every request, and a login that
// verified the old password meanwhile finds the hash changed and gets no session (login.ts).
import { normalizeName } from '../../domain/access/names.ts';
import { hashPassword, newPassword } from '../../lib/passwords.ts';
import { lockFor, type Store } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { auditProjectsOf, endSessionsOf } from './sessions.ts';
import { clearAccountCounter } from './throttle.ts';

/** A name this cannot reset (unknown, a service, disabled): said in one line. */
export class ResetRefused extends Error {}

/** The lock a password change and a login's session creation both take, so neither misses the other. */
export const passwordLock = (principalId: string): string => `password:${principalId}`;

export interface PasswordReset { principalId: string; name: string; password: string; sessionsEnded: number }

/** Sets a new random password for the person named; the password is returned once, to be printed once. */
export async function resetPassword(store: Store, givenName: string, now: Date): Promise<PasswordReset> {
  const name = normalizeName(givenName);
  const password = newPassword();
  const passwordHash = await hashPassword(password);
  return store.transaction(async (trx) => {
    const principal = await trx.selectFrom('principals').select(['id', 'kind', 'disabled_at']).where('name', '=', name).executeTakeFirst();
    if (!principal) throw new ResetRefused(`no principal is named "${name}"`);
    if (principal.kind !== 'person') throw new ResetRefused(`"${name}" is a service principal: it has API keys, not a password`);
    if (principal.disabled_at) throw new ResetRefused(`"${name}" is disabled: a password would not sign it in`);
    await lockFor(trx, store.dialect, passwordLock(principal.id));
    await trx.updateTable('principals').set({ password_hash: passwordHash }).where('id', '=', principal.id).execute();
    const sessionsEnded = await endSessionsOf(trx, principal.id, 'password_reset', now);
    // The account's lock goes with its old password; the counters of known devices and addresses stay.
    await clearAccountCounter(trx, store.dialect, name);
    for (const projectId of await auditProjectsOf(trx, principal.id)) {
      await recordAudit(trx, { projectId, kind: 'principal.password_reset', actor: 'system', data: { principal_id: principal.id, sessions_ended: sessionsEnded }, at: now });
    }
    return { principalId: principal.id, name, password, sessionsEnded };
  });
}
