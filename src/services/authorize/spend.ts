// Spends a permit's live limits atomically with the decision: for each link carrying a budget or a
// use count, a conditional UPDATE adds the amount only if the result stays within the limit. The
// row lock the UPDATE takes serializes concurrent spenders on PostgreSQL; SQLite has one writer.
// Any refusal rolls back every counter of this request (savepoint), so a DENY spends nothing.
import { sql } from 'kysely';
import type { LiveCounter, Money } from '../../domain/permit/index.ts';
import type { Tx } from '../../store/store.ts';

export type SpendResult = { ok: true } | { ok: false; detail: string };

/** `links`: how many links the presented chain has (1 for a root permit). With `dryRun`, checks that the spend would fit and changes nothing. */
export async function spendLimits(trx: Tx, projectId: string, counters: LiveCounter[], amount: Money | undefined, links: number, dryRun = false): Promise<SpendResult> {
  if (counters.length === 0) return { ok: true };
  await sql`savepoint spend`.execute(trx);
  for (const c of counters) {
    const minor = c.budget ? (amount?.minor ?? 0) : 0;
    await trx.insertInto('permit_usage').values({ commitment: c.commitment, project_id: projectId, spent_minor: 0, currency: c.budget?.currency ?? null, uses: 0 })
      .onConflict((oc) => oc.column('commitment').doNothing()).execute();
    let q = trx.updateTable('permit_usage')
      .set((eb) => ({ spent_minor: eb('spent_minor', '+', minor), uses: eb('uses', '+', 1) }))
      .where('commitment', '=', c.commitment);
    if (c.budget) q = q.where(sql<boolean>`spent_minor + ${minor} <= ${c.budget.minor}`);
    if (c.max_uses !== undefined) q = q.where(sql<boolean>`uses + 1 <= ${c.max_uses}`);
    const updated = await q.returning('commitment').executeTakeFirst();
    if (!updated) {
      await sql`rollback to savepoint spend`.execute(trx);
      await sql`release savepoint spend`.execute(trx);
      // The counters as they stood (the rollback undid this request's insert), to name the limit
      // that refused: a link may carry both, and either may be the one that ran out.
      const row = await trx.selectFrom('permit_usage').select('uses').where('commitment', '=', c.commitment).executeTakeFirst();
      return { ok: false, detail: exhaustedDetail(c, row?.uses ?? 0, links) };
    }
  }
  if (dryRun) await sql`rollback to savepoint spend`.execute(trx);
  await sql`release savepoint spend`.execute(trx);
  return { ok: true };
}

/** The detail of a refused spend, starting with the check (docs/reason-codes.md): uses first, since no amount could pass then. */
function exhaustedDetail(c: LiveCounter, uses: number, links: number): string {
  // Through a delegate, "the permit" would read as the delegate's own link, whose view may show
  // budget to spare: the root that ran out is named as such.
  const what = c.link > 0 ? `delegation link ${c.link} of the permit` : links > 1 ? 'the root permit (link 0) of the chain' : 'the permit';
  if (c.max_uses !== undefined && uses + 1 > c.max_uses) return `uses_exhausted: ${what} has no uses left (${c.max_uses} allowed)`;
  return `budget_exhausted: ${what} has not enough budget left for this amount`;
}
