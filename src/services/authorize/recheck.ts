// PostgreSQL: a decision planned with a cached API key context and a cached policy pointer
// (CHECKED_AT_COMMIT, store/read-epoch.ts) checks both inside its transaction, in the statement that
// locks the agent, so the cache costs no round trip. The key must still be valid as a fresh lookup
// would find it (not revoked, its holder a member and not disabled: http/auth/api-key.ts; a
// decision needs no role), and the pointer must still name the version the policy was evaluated
// under. Either differing throws StaleReadEpoch: nothing is written, the caller authenticates afresh
// (a revoked key gets 401) and decides again.
//
// Under READ COMMITTED the subqueries read the statement's snapshot, taken before a wait for the
// agent's lock: a key revoked or a policy activated while the decision waited is ordered after it.
// Without the cache the key was read when the request arrived, earlier still.
import { fixedSql, queryFixed, type SqlTarget } from '../../store/fixed-sql.ts';
import { StaleReadEpoch } from '../../store/read-epoch.ts';
import type { Tx } from '../../store/store.ts';

// The rule lookUpApiKey (http/auth/api-key.ts) applies to a looked-up key, in SQL.
const KEY_VALID = `exists (select 1 from api_keys k
    join memberships m on m.project_id = k.project_id and m.principal_id = k.principal_id and m.revoked_at is null
    join principals p on p.id = k.principal_id and p.disabled_at is null
    where k.id = ? and k.project_id = ? and k.revoked_at is null) as key_valid`;
const POINTER = '(select version from policy_active where project_id = ?) as policy_version';

// Parameters, in order: key id, project (key), project (pointer), then project and agent.
// Prepared: planning the joins cost PostgreSQL 0.2 ms a decision, three times their execution.
const LOCK_AND_RECHECK = fixedSql(`select a.frozen_at, ${KEY_VALID}, ${POINTER}
  from agents a where a.project_id = ? and a.did = ? for share`, { prepared: true });
const RECHECK = fixedSql(`select ${KEY_VALID}, ${POINTER}`, { prepared: true });

interface Recheck { key_valid: boolean; policy_version: number | string | null }

export interface RecheckPlan { projectId: string; actor: string; policyVersion: number | null }

function verify(row: Recheck, plan: RecheckPlan): void {
  const current = row.policy_version === null ? null : Number(row.policy_version);
  if (!row.key_valid || current !== plan.policyVersion) throw new StaleReadEpoch();
}

/**
 * Locks the agent's row as lockAgentState does and checks the plan's key (its actor) and policy
 * version; undefined when the agent has no row yet (the check has been made all the same).
 */
export async function lockAgentRechecking(trx: Tx, env: SqlTarget, plan: RecheckPlan, agent: string): Promise<{ frozen_at: string | null } | undefined> {
  const params = [plan.actor, plan.projectId, plan.projectId];
  const [row] = await queryFixed<Recheck & { frozen_at: string | null }>(trx, env, LOCK_AND_RECHECK, [...params, plan.projectId, agent]);
  if (row) {
    verify(row, plan);
    return { frozen_at: row.frozen_at };
  }
  verify((await queryFixed<Recheck>(trx, env, RECHECK, params))[0]!, plan);
  return undefined;
}
