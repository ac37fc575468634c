// The four-eyes rule for policy activation. Stand-in until the identity capability's
// getSod(db, projectId) is merged: reads settings key `sod:<projectId>`, JSON
// {four_eyes_policy_activation: boolean}; absent or unreadable means off.
import type { Db } from '../../store/store.ts';

export async function fourEyesRequired(db: Db, projectId: string): Promise<boolean> {
  const row = await db.selectFrom('settings').select('value').where('key', '=', `sod:${projectId}`).executeTakeFirst();
  if (!row) return false;
  try {
    const parsed = JSON.parse(row.value) as { four_eyes_policy_activation?: unknown } | null;
    return parsed?.four_eyes_policy_activation === true;
  } catch {
    return false;
  }
}
