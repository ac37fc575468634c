// The decision's agent lock, on both engines: one statement that locks the agent's row (reading
// its frozen state) and checks what the decision must check under its commit.
//
// The presented permit chain, for revocation (`revoked`). Under READ COMMITTED (PostgreSQL) the
// column reads the statement's snapshot, taken once the statement holds the agents table's ROW
// SHARE lock but before any wait for the agent's row, or later for a budget's. A revocation cannot
// commit between that read and the decision's commit: it first takes the table lock in EXCLUSIVE
// mode (permits.ts, revokePermit), which waits for this transaction to end, and a decision asking
// for the table lock after it waits for it, then reads it. (Decision 0011, addendum of session 36.)
// A freeze takes the same table lock, and is also read from the locked row's latest version.
//
// PostgreSQL: a decision planned with a cached API key context and a cached policy pointer
// (CHECKED_AT_COMMIT, store/read-epoch.ts) checks both in the same statement, so the cache costs no
// round trip. The key must still be valid as a fresh lookup would find it (not revoked, its holder
// a member and not disabled: http/auth/api-key.ts; a decision needs no role), and the pointer must
// still name the version the policy was evaluated under. Either differing throws StaleReadEpoch:
// nothing is written, the caller authenticates afresh (a revoked key gets 401) and decides again.
// A key revoked or a policy activated while the decision waited for the lock is ordered after it,
// as above; without the cache the key was read when the request arrived, earlier still.
import { fixedSql, fixedSqlForShare, queryFixed, type FixedSql, type SqlTarget } from '../../store/fixed-sql.ts';
import { CHECKED_AT_COMMIT, StaleReadEpoch, type ReadTag } from '../../store/read-epoch.ts';
import type { Tx } from '../../store/store.ts';
import { revokedColumn } from '../permits/permits.ts';
import { lockAgentState } from '../agents/agents.ts';

// The rule lookUpApiKey (http/auth/api-key.ts) applies to a looked-up key, in SQL: the key id and
// project are placeholders or columns of the statement it sits in.
export const keyValid = (keyId: string, projectId: string): string => `exists (select 1 from api_keys k
    join memberships m on m.project_id = k.project_id and m.principal_id = k.principal_id and m.revoked_at is null
    join principals p on p.id = k.principal_id and p.disabled_at is null
    where k.id = ${keyId} and k.project_id = ${projectId} and k.revoked_at is null)`;
export const KEY_VALID = `${keyValid('?', '?')} as key_valid`;
/** The active policy version of a project (placeholder or column). */
export const activeVersion = (projectId: string): string => `(select version from policy_active where project_id = ${projectId})`;
export const POINTER = `${activeVersion('?')} as policy_version`;

// Parameters, in order: key id, project (key), project (pointer), the chain's commitments, then
// project and agent. One statement per chain length (0: no revocation column).
// Prepared: planning the joins cost PostgreSQL 0.2 ms a decision, three times their execution.
const LOCK_AND_RECHECK: FixedSql[] = [];
const lockAndRecheck = (n: number) => (LOCK_AND_RECHECK[n] ??= fixedSql(`select a.frozen_at, ${KEY_VALID}, ${POINTER}${n ? `, ${revokedColumn(n)}` : ''}
  from agents a where a.project_id = ? and a.did = ? for share`, { prepared: true }));
const RECHECK = fixedSql(`select ${KEY_VALID}, ${POINTER}`, { prepared: true });
// Without a re-check (SQLite, whose caches are checked by read epoch; an execution on PostgreSQL):
// the frozen state as lockAgentState reads it, and the revocation column. Parameters: the chain,
// then project and agent.
const LOCK: FixedSql[] = [];
const lockWithRevocation = (n: number) =>
  (LOCK[n] ??= fixedSqlForShare(`select frozen_at, ${revokedColumn(n)} from agents where project_id = ? and did = ?`));

/** The locked agent row: frozen or not, and whether the chain it was asked about is revoked. */
export interface LockedAgent { frozen_at: string | null; revoked: boolean | undefined }

interface Recheck { key_valid: boolean; policy_version: number | string | null }

export interface RecheckPlan { projectId: string; actor: string; policyVersion: number | null }

function verify(row: Recheck, plan: RecheckPlan): void {
  const current = row.policy_version === null ? null : Number(row.policy_version);
  if (!row.key_valid || current !== plan.policyVersion) throw new StaleReadEpoch();
}

/**
 * Locks the agent's row as lockAgentState does, in one statement with the checks the decision
 * needs under its commit: the permit `chain` for revocation (when given: `revoked` is then set),
 * and with CHECKED_AT_COMMIT the plan's key (its actor) and policy version. Undefined when the
 * agent has no row yet (the key and policy check has been made all the same; revocation not).
 */
export async function lockAgentForDecision(trx: Tx, env: SqlTarget, plan: RecheckPlan & { epoch?: ReadTag | undefined }, agent: string, chain: readonly string[] | null): Promise<LockedAgent | undefined> {
  const n = chain?.length ?? 0;
  type Row = { frozen_at: string | null; revoked?: unknown };
  const locked = (row: Row): LockedAgent => ({ frozen_at: row.frozen_at, revoked: n ? Boolean(row.revoked) : undefined });
  if (plan.epoch === CHECKED_AT_COMMIT) {
    const params = [plan.actor, plan.projectId, plan.projectId];
    const [row] = await queryFixed<Recheck & Row>(trx, env, lockAndRecheck(n), [...params, ...(chain ?? []), plan.projectId, agent]);
    if (row) {
      verify(row, plan);
      return locked(row);
    }
    verify((await queryFixed<Recheck>(trx, env, RECHECK, params))[0]!, plan);
    return undefined;
  }
  if (n === 0) {
    const row = await lockAgentState(trx, env, plan.projectId, agent);
    return row && { frozen_at: row.frozen_at, revoked: undefined };
  }
  const [row] = await queryFixed<Row>(trx, env, lockWithRevocation(n), [...chain!, plan.projectId, agent]);
  return row && locked(row);
}
