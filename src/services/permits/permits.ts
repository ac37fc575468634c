// Issuing, listing and revoking permits. Root permits are signed through the Signer with the
// project's permit key; revoking a permit revokes every permit delegated from it, because every
// decision checks each commitment of the presented chain against this table.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { issuePermit, permitCommitment, PermitError, verifyPermitSignatures, type GavelConstraints, type VerifiedPermit } from '../../domain/permit/index.ts';
import { Problem } from '../../http/problem.ts';
import type { Signer } from '../../signer/signer.ts';
import type { Db, Dialect, Tx } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { ensureAgent, queueAheadOfDecisions } from '../agents/agents.ts';
import { fixedSql, queryFixed, type FixedSql, type SqlTarget } from '../../store/fixed-sql.ts';
import { parseJsonExactly } from '../../lib/json-parse.ts';

/** The Signer key that signs a project's permits. */
export const permitKeyName = (projectId: string) => `permit-${projectId}`;

export interface IssueInput {
  projectId: string;
  agent: string;
  constraints: Omit<GavelConstraints, 'parent'>;
  notBefore?: Date;
  expiresAt: Date;
  actor: string;
  now: Date;
}

export interface PermitView {
  commitment: string;
  agent: string;
  parent: string | null;
  claims: unknown;
  issued_by: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  revoked_by: string | null;
  /** When revoked through an ancestor (its own row not revoked): that ancestor's commitment. */
  revoked_via: string | null;
  /** `not_yet_valid`: before the permit's not-before, when every decision refuses it. */
  status: 'active' | 'not_yet_valid' | 'revoked' | 'expired';
  /** What decisions have spent through this link so far (a delegate's spend counts on its ancestors too). */
  usage: PermitUsage;
}

export interface PermitUsage { uses: number; spent_minor: number; currency: string | null }
/** What the counters hold; the currency comes from the claims (view). */
type Spent = Pick<PermitUsage, 'uses' | 'spent_minor'>;
const NOTHING_SPENT: Spent = { uses: 0, spent_minor: 0 };

/** Signs a permit (outside any transaction: signing may be remote), then records it. */
export async function signRootPermit(signer: Signer, input: IssueInput): Promise<string> {
  const iat = Math.floor(input.now.getTime() / 1000);
  try {
    return await issuePermit(signer, permitKeyName(input.projectId), {
      aud: input.projectId, sub: input.agent, jti: randomUUID(), iat,
      nbf: input.notBefore ? Math.floor(input.notBefore.getTime() / 1000) : iat,
      exp: Math.floor(input.expiresAt.getTime() / 1000),
      gavel: input.constraints,
    });
  } catch (e) {
    if (e instanceof PermitError) throw new Problem(422, 'invalid_permit_claims', e.message);
    throw e;
  }
}

export async function recordIssuedPermit(trx: Tx, input: IssueInput, jws: string): Promise<PermitView> {
  const commitment = permitCommitment(jws);
  const at = input.now.toISOString();
  const claims = parseJsonExactly(Buffer.from(jws.split('.')[1]!, 'base64url').toString('utf8'));
  await ensureAgent(trx, input.projectId, input.agent, input.actor, at);
  await trx.insertInto('permits').values({
    commitment, project_id: input.projectId, agent: input.agent, jws, parent: null, claims: JSON.stringify(claims),
    issued_by: input.actor, created_at: at, expires_at: input.expiresAt.toISOString(), revoked_at: null, revoked_by: null,
  }).execute();
  await recordAudit(trx, { projectId: input.projectId, kind: 'permit.issued', actor: input.actor, data: { commitment, agent: input.agent, constraints: input.constraints, not_before: new Date(claims.nbf * 1000).toISOString(), expires_at: input.expiresAt.toISOString() } });
  return view({ commitment, agent: input.agent, parent: null, claims: JSON.stringify(claims), issued_by: input.actor, created_at: at, expires_at: input.expiresAt.toISOString(), revoked_at: null, revoked_by: null }, input.now);
}

/**
 * Records the delegated links of a chain the first time a decision verifies it (the root was
 * recorded when issued), so each link can be looked up and revoked by its own commitment, which
 * revokes it and what was delegated from it and leaves its ancestors standing. Agents delegate
 * among themselves, so this is where the service first learns of a link.
 */
export async function recordDelegatedLinks(db: Db | Tx, projectId: string, permit: VerifiedPermit, now: Date): Promise<void> {
  await recordLinks(db, projectId, permit, 1, now);
}

/**
 * Records the links of `permit` from `first` on, each under its parent, a link already recorded
 * left as it is. A link recorded from a presentation has no JWS, and `issued_by` is its issuer claim.
 */
async function recordLinks(db: Db | Tx, projectId: string, permit: VerifiedPermit, first: number, now: Date): Promise<void> {
  if (permit.links.length <= first) return;
  const at = now.toISOString();
  const rows = permit.links.slice(first).map((link, i) => ({
    commitment: link.commitment, project_id: projectId, agent: link.claims.sub, jws: null, parent: permit.links[first + i - 1]?.commitment ?? null,
    claims: JSON.stringify(link.claims), issued_by: link.claims.iss, created_at: at,
    expires_at: new Date(link.claims.exp * 1000).toISOString(), revoked_at: null, revoked_by: null,
  }));
  await db.insertInto('permits').values(rows).onConflict((oc) => oc.column('commitment').doNothing()).execute();
}

/**
 * A delegated link no decision has presented yet is unknown here, so its commitment alone cannot
 * revoke it: the caller sends the chain (the link itself or any chain below it), which must verify
 * against the project's key as a decision would, time aside (an expired link may still be revoked),
 * and must hold the commitment being revoked. Its links are then recorded as a decision records them.
 */
export async function chainHoldingLink(signer: Signer, projectId: string, presented: string, commitment: string): Promise<VerifiedPermit> {
  const verified = await verifyPermitSignatures(presented, { projectId, projectPublicKey: await signer.publicKey(permitKeyName(projectId)) });
  if (!verified.ok) throw new Problem(422, 'permit_invalid', `the permit sent does not verify for this project: ${verified.check}: ${verified.detail}`);
  if (!verified.permit.links.some((link) => link.commitment === commitment)) {
    throw new Problem(422, 'commitment_not_in_chain', 'the commitment to revoke is not a link of the permit sent');
  }
  return verified.permit;
}

/**
 * `chain`: a chain holding a link no decision has presented yet (chainHoldingLink): its links are
 * recorded once the lock below is held.
 * `dialect` postgres: the revocation queues ahead of decisions as a freeze does (agents.ts,
 * queueAheadOfDecisions). A decision reads the chain's revocation under its commit, holding the
 * agents table's ROW SHARE lock from that read to its commit (recheck.ts, one-statement.ts): the
 * revocation waits for the decisions in flight to commit, and every later one waits for it and
 * then reads it. Without the lock a decision that had read the chain as standing, then waited (for
 * a contended budget row, say), recorded an ALLOW after the revocation had committed and answered.
 * `now` is read once the lock is held, so revoked_at is when the revocation took effect.
 */
export async function revokePermit(trx: Tx, input: { projectId: string; commitment: string; actor: string; now: Date | (() => Date); dialect?: Dialect; chain?: VerifiedPermit }): Promise<PermitView> {
  const { projectId, commitment } = input;
  // A revocation that changes nothing takes no lock: the table lock pauses every decision of the database.
  if (input.dialect === 'postgres') {
    const current = await trx.selectFrom('permits').select('revoked_at').where('project_id', '=', projectId).where('commitment', '=', commitment).executeTakeFirst();
    if (current?.revoked_at) throw alreadyRevoked(current.revoked_at);
    if (!current && !input.chain) throw unknownPermit();
  }
  await queueAheadOfDecisions(trx, input.dialect);
  const now = typeof input.now === 'function' ? input.now() : input.now;
  // Its root too: one the project's key signed that this database does not hold (restored from an
  // older copy with the keys kept) is taken by decisions, so sending it must be able to revoke it.
  if (input.chain) await recordLinks(trx, projectId, input.chain, 0, now);
  const row = await trx.updateTable('permits').set({ revoked_at: now.toISOString(), revoked_by: input.actor })
    .where('project_id', '=', projectId).where('commitment', '=', commitment).where('revoked_at', 'is', null)
    .returningAll().executeTakeFirst();
  if (!row) {
    const exists = await trx.selectFrom('permits').select('revoked_at').where('project_id', '=', projectId).where('commitment', '=', commitment).executeTakeFirst();
    if (!exists) throw unknownPermit();
    throw alreadyRevoked(exists.revoked_at);
  }
  await recordAudit(trx, { projectId, kind: 'permit.revoked', actor: input.actor, data: { commitment } });
  return (await permitViews(trx, projectId, [row], now))[0]!;
}

const unknownPermit = () => new Problem(404, 'not_found', 'no permit with this commitment in the project; a delegated link no decision has presented yet (or a root this database does not hold) is revoked by sending its chain as `permit`');
const alreadyRevoked = (at: string | null) => new Problem(409, 'already_revoked', `the permit was revoked at ${at}`);

/** True when any commitment of the chain is revoked (checked live on every decision). */
export async function anyRevoked(trx: Tx | Db, chain: string[], target?: SqlTarget): Promise<boolean> {
  return (await queryFixed(trx, target, revokedQuery(chain.length), chain)).length > 0;
}

const REVOKED_BY_LENGTH: FixedSql[] = [];
/** One fixed statement per chain length (chains are short: DESIGN.md bounds their depth). */
function revokedQuery(n: number): FixedSql {
  return (REVOKED_BY_LENGTH[n] ??= fixedSql(`select 1 from permits where ${revokedCondition(n)} limit 1`));
}
const revoked = (commitmentIs: string) => `${commitmentIs} and revoked_at is not null`;
const revokedCondition = (n: number) => revoked(`commitment in (${Array(n).fill('?').join(', ')})`);

/**
 * The same check inside another statement (the decision's agent lock, or its one statement), so it
 * costs no statement of its own: true when any of the `n` commitments bound here is revoked.
 */
export const revokedExists = (n: number): string => `exists (select 1 from permits where ${revokedCondition(n)})`;
/** revokedExists as a column named `revoked`. */
export const revokedColumn = (n: number): string => `${revokedExists(n)} as revoked`;
/** revokedExists for commitments given as a text array expression (a column, say) instead of `n` placeholders. */
export const revokedAmong = (array: string): string => `exists (select 1 from permits where ${revoked(`commitment = any(${array})`)})`;

type Row = Omit<PermitView, 'status' | 'claims' | 'revoked_via' | 'usage'> & { claims: string };
/** The revocation of a permit's ancestor, which revokes the permit too. */
export interface AncestorRevocation { commitment: string; revoked_at: string; revoked_by: string | null }

/**
 * A permit as the console shows it. A link whose ancestor is revoked is revoked too (every decision
 * refuses it), so it reads `revoked`, with the ancestor's time, actor and commitment.
 */
export function view(row: Row, now: Date, ancestor?: AncestorRevocation, spent: Spent = NOTHING_SPENT): PermitView {
  const claims = parseJsonExactly(row.claims) as { nbf?: number; gavel?: Pick<GavelConstraints, 'budget' | 'max_per_request'> };
  // The claims fix the currency of a permit with a money limit (one currency: domain/permit/claims.ts),
  // before anything is spent and on a link whose counter has no budget (services/authorize/spend.ts).
  const usage = { ...spent, currency: (claims.gavel?.budget ?? claims.gavel?.max_per_request)?.currency ?? null };
  if (row.revoked_at) return { ...row, claims, revoked_via: null, status: 'revoked', usage };
  if (ancestor) return { ...row, claims, revoked_at: ancestor.revoked_at, revoked_by: ancestor.revoked_by, revoked_via: ancestor.commitment, status: 'revoked', usage };
  const status = row.expires_at <= now.toISOString() ? 'expired' : typeof claims.nbf === 'number' && claims.nbf * 1000 > now.getTime() ? 'not_yet_valid' : 'active';
  return { ...row, claims, revoked_via: null, status, usage };
}

/** Rows as the console shows them: each delegated link's revoked ancestors looked up in one statement. */
export async function permitViews(db: Db | Tx, projectId: string, rows: readonly Row[], now: Date): Promise<PermitView[]> {
  const ancestors = await revokedAncestors(db, projectId, rows);
  const usage = new Map<string, Spent>();
  if (rows.length > 0) {
    const spent = await db.selectFrom('permit_usage').select(['commitment', 'uses', 'spent_minor'])
      .where('project_id', '=', projectId).where('commitment', 'in', rows.map((r) => r.commitment)).execute();
    for (const u of spent) usage.set(u.commitment, { uses: Number(u.uses), spent_minor: Number(u.spent_minor) });
  }
  return rows.map((r) => view(r, now, ancestors.get(r.commitment), usage.get(r.commitment)));
}

/**
 * The root permit of each of `commitments` the permits table holds, walked up `parent` in one
 * recursive statement per thousand (a decision records its chain's links before it is taken, so
 * every verified permit's chain is there). A root maps to itself; an unknown commitment to nothing.
 */
export async function rootPermits(db: Db | Tx, projectId: string, commitments: readonly string[]): Promise<Map<string, string>> {
  const roots = new Map<string, string>();
  const distinct = [...new Set(commitments)];
  for (let i = 0; i < distinct.length; i += 1000) {
    const result = await sql<{ start: string; root: string }>`
      with recursive up(start, commitment, parent) as (
        select p.commitment, p.commitment, p.parent from permits p
          where p.project_id = ${projectId} and p.commitment in (${sql.join(distinct.slice(i, i + 1000))})
        union all
        select up.start, p.commitment, p.parent from up join permits p on p.project_id = ${projectId} and p.commitment = up.parent
      )
      select start, commitment as root from up where parent is null`.execute(db);
    for (const r of result.rows) roots.set(r.start, r.root);
  }
  return roots;
}

/**
 * For each delegated row not revoked itself, the earliest revocation among its ancestors, walked
 * up `parent` in one recursive statement (chains are short: DESIGN.md bounds their depth). Only
 * the console's reads call this; decisions check the presented chain's commitments directly.
 * Each ancestor's revocation is carried up with it, read by key as it is reached: joined to the
 * permits table once more after the walk, SQLite read every permit of the project to probe the
 * walk's rows instead.
 */
async function revokedAncestors(db: Db | Tx, projectId: string, rows: readonly Row[]): Promise<Map<string, AncestorRevocation>> {
  const found = new Map<string, AncestorRevocation>();
  const starts = rows.filter((r) => r.parent !== null && r.revoked_at === null);
  if (starts.length === 0) return found;
  const result = await sql<{ start: string; commitment: string; revoked_at: string; revoked_by: string | null }>`
    with recursive up(start, commitment, parent, revoked_at, revoked_by) as (
      select s.commitment, a.commitment, a.parent, a.revoked_at, a.revoked_by from permits s
        join permits a on a.project_id = ${projectId} and a.commitment = s.parent
        where s.project_id = ${projectId} and s.commitment in (${sql.join(starts.map((r) => r.commitment))})
      union all
      select up.start, a.commitment, a.parent, a.revoked_at, a.revoked_by from up
        join permits a on a.project_id = ${projectId} and a.commitment = up.parent
    )
    select start, commitment, revoked_at, revoked_by from up where revoked_at is not null order by revoked_at`.execute(db);
  for (const r of result.rows) if (!found.has(r.start)) found.set(r.start, { commitment: r.commitment, revoked_at: r.revoked_at, revoked_by: r.revoked_by });
  return found;
}
