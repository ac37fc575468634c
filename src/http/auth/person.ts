// Statements only a person may make through an API key (decision 0403): the key's holder must be a
// principal of kind person, read now, whatever roles the key carries.
import type { Db } from '../../store/store.ts';
import { Problem } from '../problem.ts';

/** 403 person_required unless `principalId` is a person; `refusal` says what a service may not do, and why. */
export async function requirePerson(db: Db, principalId: string, refusal: string): Promise<void> {
  const holder = await db.selectFrom('principals').select('kind').where('id', '=', principalId).executeTakeFirst();
  if (holder?.kind !== 'person') throw new Problem(403, 'person_required', `${refusal}, and this key belongs to a service principal (${principalId})`);
}
