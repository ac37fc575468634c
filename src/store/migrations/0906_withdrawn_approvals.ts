// The spec names what revoking an unconsumed approval leads to: withdrawn (section 3). Revoked
// obligations were stored as `revoked`; they are `withdrawn` now, and the state that was read as
// withdrawn (an approval whose key was retired or whose approver lost the role) is read as lapsed.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.updateTable('approval_requests').set({ status: 'withdrawn' }).where('status', '=', 'revoked').execute();
}
