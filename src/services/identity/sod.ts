// A project's separation-of-duties document. `getSod` is what other capabilities read (the policy
// engine reads four_eyes_policy_activation before an activation).
import canonicalize from 'canonicalize';
import { DEFAULT_SOD, sodViolations, validateSod, validateStoredSod, type SodDocument } from '../../domain/access/sod.ts';
import { isRole, type Role } from '../../domain/access/roles.ts';
import { invalidRequest, Problem } from '../../http/problem.ts';
import type { Db, Store, Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { lockAsAdmin, rolesOfKeysMintedBy } from './members.ts';
import { parseJsonExactly } from '../../lib/json-parse.ts';

/** Thrown when a stored SoD document no longer validates (it was validated when saved). */
export class SodIntegrityError extends Error {
  readonly code = 'sod_integrity';
}

/** The stored document as saved, the text of one that no longer reads, or undefined if none was saved. */
async function storedSod(db: Db | Tx, projectId: string): Promise<{ document: SodDocument } | { unreadable: string } | undefined> {
  const row = await db.selectFrom('sod_settings').select('document').where('project_id', '=', projectId).executeTakeFirst();
  if (!row) return undefined;
  let parsed: ReturnType<typeof validateStoredSod>;
  try { parsed = validateStoredSod(parseJsonExactly(row.document)); } catch { return { unreadable: row.document }; }
  return parsed.ok ? { document: parsed.value } : { unreadable: row.document };
}

/**
 * The project's SoD document; DEFAULT_SOD until an ADMIN has saved one. A stored one that no longer
 * validates fails closed: falling back to the default would turn four-eyes activation off and drop
 * every exclusive pair but the default's without a word. An ADMIN's PUT replaces it.
 */
export async function getSod(db: Db | Tx, projectId: string): Promise<SodDocument> {
  const stored = await storedSod(db, projectId);
  if (stored === undefined) return DEFAULT_SOD;
  if ('unreadable' in stored) throw new SodIntegrityError(`the stored separation-of-duties document of ${projectId} no longer validates; an ADMIN's PUT …/sod replaces it`);
  return stored.document;
}

export interface SodRecord { document: SodDocument; updated_at: string | null; updated_by: string | null }

export async function readSod(db: Db, projectId: string): Promise<SodRecord> {
  const row = await db.selectFrom('sod_settings').selectAll().where('project_id', '=', projectId).executeTakeFirst();
  return { document: await getSod(db, projectId), updated_at: row?.updated_at ?? null, updated_by: row?.updated_by ?? null };
}

/**
 * Replaces the document. Refused (409 sod_conflict) while a member already holds a pair it would
 * forbid; the stored document sent again is answered as stored, with nothing written or audited.
 */
export async function putSod(store: Store, input: { projectId: string; document: unknown; actor: string }, now: Date): Promise<SodRecord> {
  const v = validateSod(input.document);
  if (!v.ok) throw invalidRequest(v.errors, 'the SoD document is not valid; see errors');
  return store.transaction(async (trx) => {
    await lockAsAdmin(trx, store, input.projectId, input.actor);
    const grants = await trx.selectFrom('role_grants').select(['principal_id', 'role']).where('project_id', '=', input.projectId).execute();
    const byPrincipal = new Map<string, Role[]>();
    for (const g of grants) if (isRole(g.role)) byPrincipal.set(g.principal_id, [...(byPrincipal.get(g.principal_id) ?? []), g.role]);
    // A key minted for another counts for its minter, who holds its secret (members.ts, rolesOfKeysMintedBy).
    const minted = await rolesOfKeysMintedBy(trx, input.projectId);
    const offenders = [...byPrincipal].flatMap(([principal_id, roles]) =>
      sodViolations(v.value, roles, minted.get(principal_id)).map((pair) => ({ principal_id, roles: pair })));
    if (offenders.length > 0) {
      throw new Problem(409, 'sod_conflict', 'members already hold role pairs this document forbids (a role held, or carried by a live API key the member minted for another and so holds the secret of); revoke one role or key of each pair first', { extra: { conflicts: offenders } });
    }
    const document = canonicalize(v.value) ?? '{}';
    // The same document again changes nothing: nothing is written or audited (as a role granted twice).
    const same = await trx.selectFrom('sod_settings').select(['updated_at', 'updated_by']).where('project_id', '=', input.projectId).where('document', '=', document).executeTakeFirst();
    if (same) return { document: v.value, updated_at: same.updated_at, updated_by: same.updated_by };
    // The one read that takes an unreadable document: replacing it is how it is mended.
    const stored = await storedSod(trx, input.projectId);
    const before = stored === undefined ? DEFAULT_SOD : 'document' in stored ? stored.document : { unreadable: stored.unreadable };
    const at = now.toISOString();
    await trx.insertInto('sod_settings').values({ project_id: input.projectId, document, updated_at: at, updated_by: input.actor })
      .onConflict((oc) => oc.column('project_id').doUpdateSet({ document, updated_at: at, updated_by: input.actor })).execute();
    await recordAudit(trx, { projectId: input.projectId, kind: 'sod.updated', actor: input.actor, data: { before, after: v.value }, at: now });
    return { document: v.value, updated_at: at, updated_by: input.actor };
  });
}
