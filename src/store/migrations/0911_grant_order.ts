// A role revoked and granted again reaches only keys minted after the new grant. Which grants a key
// counts was judged by wall-clock stamps (granted_at <= the key's created_at), written by whichever
// instance made the grant or minted the key: a clock stepped back, or instances whose clocks differ,
// could stamp a re-grant before an old key and give it the role back. Now by numbers the database
// hands out under the project's roles lock: each grant is numbered one past its holder's latest
// (memberships.last_grant), and a key records the number its holder was at when it was minted
// (api_keys.grants_upto); it counts the grants numbered up to that (decision 0201, addendum). An
// approval likewise records its approver's number (approvals.grants_upto): only an APPROVER grant
// numbered up to it keeps it usable, where it compared the grant's stamp with its own.
// Existing rows keep their meaning: a grant is numbered by the rank of its stamp among its holder's
// grant stamps, and a key (an approval) gets the count of its holder's stamps no later than its own,
// so exactly the grants it counted before are numbered up to it; last_grant is at least every key's.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('memberships').addColumn('last_grant', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('role_grants').addColumn('grant_no', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('api_keys').addColumn('grants_upto', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('approvals').addColumn('grants_upto', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await numberByStamps(db);
}

/** Numbers the grants and keys already stored so that each key counts the grants it counted by their stamps. */
export async function numberByStamps(db: Kysely<any>): Promise<void> {
  const stampsUpTo = (project: string, principal: string, at: string) => sql.raw(`(select count(distinct g.granted_at) from role_grants g
    where g.project_id = ${project} and g.principal_id = ${principal} and g.granted_at <= ${at})`);
  await sql`update role_grants set grant_no = ${stampsUpTo('role_grants.project_id', 'role_grants.principal_id', 'role_grants.granted_at')}`.execute(db);
  await sql`update api_keys set grants_upto = ${stampsUpTo('api_keys.project_id', 'api_keys.principal_id', 'api_keys.created_at')}`.execute(db);
  await sql`update approvals set grants_upto = ${stampsUpTo('approvals.project_id', 'approvals.principal_id', 'approvals.created_at')}`.execute(db);
  await sql`update memberships set last_grant = (select count(distinct g.granted_at) from role_grants g
    where g.project_id = memberships.project_id and g.principal_id = memberships.principal_id)`.execute(db);
}
