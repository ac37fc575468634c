// A single leaf's hash lives in its event's row (audit_events.leaf_hash), and audit_nodes keeps
// only subtrees of two leaves or more (decision 0603): every sequenced event's leaf hash is copied
// from its level-0 node, then those nodes are dropped. One pass over the sequenced events, each a
// lookup by audit_nodes' key (pos = leaf index at level 0). An event still without a hash after this
// (none, unless rows were written by hand) is hashed from its text by the readers.
//
// This migration is also the marker that makes an older version refuse this database at start (its
// migrator does not know the file), since an older version would look for level-0 nodes here.
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../store.ts';

export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await sql`update audit_events set leaf_hash = (select n.hash from audit_nodes n where n.pos = audit_events.leaf_index and n.level = 0)
    where leaf_hash is null and leaf_index is not null`.execute(db);
  await sql`delete from audit_nodes where level = 0`.execute(db);
}
