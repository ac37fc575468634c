// Self-registration creates a person with no project memberships and no roles: it grants nothing
// until an ADMIN of a project adds the person (POST …/members). See docs/identity.md. It is audited
// (`principal.registered`) in the installation's project.
import { normalizeName } from '../../domain/access/names.ts';
import { hashPassword } from '../../lib/passwords.ts';
import { newId } from '../../lib/ids.ts';
import { conflict } from '../../http/problem.ts';
import type { Store } from '../../store/store.ts';
import { installationProject } from '../bootstrap.ts';
import { recordAudit } from '../audit/record.ts';

export async function registerPerson(store: Store, input: { name: string; password: string }, now: Date): Promise<{ id: string; name: string; created_at: string }> {
  const name = normalizeName(input.name);
  const taken = await store.db.selectFrom('principals').select('id').where('name', '=', name).executeTakeFirst();
  if (taken) throw conflict('that name is taken; choose another', 'name_taken');
  const password_hash = await hashPassword(input.password);
  const id = newId('prn', now.getTime());
  const created_at = now.toISOString();
  try {
    await store.transaction(async (trx) => {
      await trx.insertInto('principals').values({ id, kind: 'person', name, password_hash, created_at, disabled_at: null }).execute();
      // A mutation like any other (the identity issue: every one is audited): in the installation's project, since it belongs to none.
      const projectId = await installationProject(trx);
      if (projectId) await recordAudit(trx, { projectId, kind: 'principal.registered', actor: id, data: { principal_id: id, name, kind: 'person' }, at: now });
    });
  } catch (e) {
    throw nameTakenIfUnique(e);
  }
  return { id, name, created_at };
}

/**
 * Two principals of one name made at once (a registration, a member created by key): the unique
 * index on the name decides, and the loser is told the name is taken rather than given a 500.
 */
export function nameTakenIfUnique(e: unknown): unknown {
  return /unique|duplicate/i.test((e as Error | null)?.message ?? '') ? conflict('that name is taken; choose another', 'name_taken') : e;
}
