// The four-eyes rule for policy activation, read from the project's separation-of-duties
// document (identity capability): when on, the principal that saved a version may not activate it.
import type { Db } from '../../store/store.ts';
import { getSod } from '../identity/sod.ts';

export async function fourEyesRequired(db: Db, projectId: string): Promise<boolean> {
  return (await getSod(db, projectId)).four_eyes_policy_activation === true;
}
