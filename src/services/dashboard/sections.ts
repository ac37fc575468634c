// The console dashboard's sections from the capabilities beyond identity: what a member opening
// the project wants to see first. What needs a person (pending obligations, executions whose
// outcome is UNKNOWN), which policy decides, and whether the audit log is being witnessed: a
// witness that refuses the log's checkpoints (a fork or a rollback) is said here, not only in the log.
import type { Db } from '../../store/store.ts';
import { latestCheckpoint, openWitnessProblem } from '../auditlog/checkpointer.ts';

/** The last time the witness did not cosign, as the audit log's leader recorded it (auditlog/runner.ts). */
export interface WitnessProblem { kind: string; reason: string | null; at: string }

export interface DashboardSections {
  policy: { active_version: number | null; activated_at: string | null };
  approvals: { pending: number };
  executions: { unknown: number; in_flight: number };
  audit_log: {
    tree_size: number;
    latest_checkpoint: { size: number; created_at: string; witnessed_at: string | null } | null;
    witnessed_size: number | null;
    /** The witness's last refusal or absence, when nothing was cosigned after it; null otherwise. */
    witness_problem: WitnessProblem | null;
  };
}

const count = (rows: { n: number | string | bigint }[]) => Number(rows[0]?.n ?? 0);

export async function dashboardSections(db: Db, projectId: string, now: Date): Promise<DashboardSections> {
  const active = await db.selectFrom('policy_active').select(['version', 'activated_at']).where('project_id', '=', projectId).executeTakeFirst();
  const pending = await db.selectFrom('approval_requests').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId).where('status', '=', 'pending').where('expires_at', '>', now.toISOString()).execute();
  const byStatus = await db.selectFrom('executions').select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('project_id', '=', projectId).where('status', 'in', ['UNKNOWN', 'IN_FLIGHT']).groupBy('status').execute();
  const state = await db.selectFrom('audit_log_state').select('size').executeTakeFirst();
  const latest = await latestCheckpoint(db);
  const witnessed = await latestCheckpoint(db, { witnessed: true });
  // A problem the witness has since put right (it cosigned a checkpoint afterwards) is not shown.
  const open = await openWitnessProblem(db);
  return {
    policy: { active_version: active?.version ?? null, activated_at: active?.activated_at ?? null },
    approvals: { pending: count(pending) },
    executions: {
      unknown: count(byStatus.filter((r) => r.status === 'UNKNOWN')),
      in_flight: count(byStatus.filter((r) => r.status === 'IN_FLIGHT')),
    },
    audit_log: {
      tree_size: Number(state?.size ?? 0),
      latest_checkpoint: latest ? { size: latest.size, created_at: latest.created_at, witnessed_at: latest.witnessed_at } : null,
      witnessed_size: witnessed?.size ?? null,
      witness_problem: open,
    },
  };
}
