// Executions (docs/executions.md): an ALLOW may carry a call to a configured merchant. The nonce
// is reserved, and the execution recorded IN_FLIGHT, inside the decision transaction (reserve.ts),
// so the decision, its audit event and the reservation commit together before any byte is sent.
// Then one call, its outcome recorded and audited. A repeat of the nonce is REPLAY: no call, no
// spend, no new decision, only an audit event saying it was replayed.
import type { AuthorizeInput, DecisionRecord } from '../authorize/authorize.ts';
import type { ExecutionReservation } from './reserve.ts';
import { newMonotonicId } from '../../lib/ids.ts';
import { callMerchant, type CallOutcome } from '../../merchants/call.ts';
import type { MerchantRegistry, Merchant, Operation } from '../../merchants/config.ts';
import type { GavelWriter } from '../writer/procedures.ts';
import type { Db, Store, Tx } from '../../store/store.ts';
import type { ExecutionsTable } from '../../store/schema/executions.ts';
import { recordAudit, recordAuditWith } from '../audit/record.ts';
import { execFixed, fixedSql, readFixed, type SqlTarget } from '../../store/fixed-sql.ts';
import { actionFingerprint, executionCall } from './fingerprint.ts';
import { inProgress, NonceTaken, nonceReused, unknownMerchant, unknownOperation } from './errors.ts';
import { refuseUnboundAmount } from './amount.ts';
import type { Money } from '../../domain/money/money.ts';
import { databaseUnreachable } from '../../store/unreachable.ts';

export type ExecutionStatus = 'IN_FLIGHT' | 'SUCCEEDED' | 'FAILED' | 'UNKNOWN';
export type Settled = Exclude<ExecutionStatus, 'IN_FLIGHT'>;

export interface ExecutionRequestInput { merchant: string; operation: string; payload: object; nonce: string }
export interface DecideContext { projectId: string; actor: string; requestId: string; now: Date }

export type ExecutionResult =
  | { kind: 'decided'; record: DecisionRecord; execution?: { id: string; status: Settled } }
  | { kind: 'replay'; audit_id: string; policy_version: number | null; execution: { id: string; status: Settled } };

export class Executions {
  readonly #store: Store;
  readonly #writer: GavelWriter;
  readonly #merchants: MerchantRegistry;
  readonly instanceId: string;
  readonly #now: () => Date;
  /** Freshens this instance's heartbeat if it went stale (InstanceKeeper.vouch), before a reservation. */
  readonly #vouch: () => Promise<void>;
  /** Whether this instance's heartbeat is still fresh (InstanceKeeper.fresh), asked before a call is sent. */
  readonly #fresh: () => boolean;
  /** Aborted by abandonCalls(): calls still unanswered are given up (merchants/call.ts). */
  readonly #abandon = new AbortController();

  constructor(deps: { store: Store; writer: GavelWriter; merchants: MerchantRegistry; instanceId: string; now: () => Date; vouch?: () => Promise<void>; fresh?: () => boolean }) {
    this.#store = deps.store;
    this.#writer = deps.writer;
    this.#merchants = deps.merchants;
    this.instanceId = deps.instanceId;
    this.#now = deps.now;
    this.#vouch = deps.vouch ?? (async () => {});
    this.#fresh = deps.fresh ?? (() => true);
  }

  /**
   * Shutdown stops waiting for merchants: every call still unanswered settles now as its timeout
   * would settle it (UNKNOWN once connected), so its outcome is recorded and its caller answered
   * before the process exits; a call not yet begun is not sent (FAILED).
   */
  abandonCalls(): void {
    this.#abandon.abort();
  }

  /**
   * Merchant and operation must be configured, and the payload must ask for the amount authorized
   * where the operation says it carries one (amount.ts); checked before any decision is spent.
   */
  resolveTarget(exec: ExecutionRequestInput, amount: Money | undefined): { merchant: Merchant; operation: Operation } {
    const merchant = this.#merchants.get(exec.merchant);
    if (!merchant) throw unknownMerchant(exec.merchant, this.#merchants.size === 0);
    const operation = merchant.operations.get(exec.operation);
    if (!operation) throw unknownOperation(exec.merchant, exec.operation);
    refuseUnboundAmount(exec.merchant, exec.operation, operation, amount, exec.payload);
    return { merchant, operation };
  }

  async run(ctx: DecideContext, input: AuthorizeInput, exec: ExecutionRequestInput,
    decide: (reservation: ExecutionReservation) => Promise<DecisionRecord>): Promise<ExecutionResult> {
    const fingerprint = actionFingerprint({ ...input, merchant: exec.merchant, operation: exec.operation, payload: exec.payload });
    // Monotonic: the list is ordered by id, and several executions may start in one millisecond.
    // Minted before any await, as ctx.now (created_at) was, so the two agree on which came first.
    const executionId = newMonotonicId('exe');

    // First check: a nonce already bound answers without deciding, even if its merchant has since
    // left the configuration (a repeat is always REPLAY with the stored outcome, spec 3).
    const seen = await this.#byNonce(ctx.projectId, exec.nonce);
    if (seen) return this.#repeat(ctx, seen, fingerprint);
    const target = this.resolveTarget(exec, input.amount);

    const reservation: ExecutionReservation = {
      executionId, instanceId: this.instanceId, nonce: exec.nonce, fingerprint, call: executionCall(exec), merchant: exec.merchant, operation: exec.operation,
      agent: input.agent, action: input.action, resource: input.resource,
    };

    await this.#vouch();
    let record: DecisionRecord;
    try {
      record = await decide(reservation);
    } catch (e) {
      if (!(e instanceof NonceTaken)) {
        // In the background: during an outage the caller's 503 must not wait out the retries.
        if (databaseUnreachable(e)) void this.#withdrawUnsent(ctx, executionId);
        throw e;
      }
      const winner = await this.#byNonce(ctx.projectId, exec.nonce);
      if (!winner) throw e; // cannot happen: the conflict was with a committed row
      return this.#repeat(ctx, winner, fingerprint);
    }
    // An ALLOW with a reservation committed its IN_FLIGHT row (commit.ts); anything else reserved nothing.
    if (record.decision !== 'ALLOW') return { kind: 'decided', record };

    // Paused between the vouch and now (a VM, a stall while the COMMIT was answered): another
    // instance may have taken this one for dead and marked the reservation UNKNOWN, for a person to
    // resolve. It is not sent then: settled as never delivered (kept as a late outcome if marked).
    const outcome = !this.#fresh() ? { status: 'FAILED' as const, httpStatus: null, note: STALE_NOTE }
      : await callMerchant({ ...target, payload: exec.payload, nonce: exec.nonce, executionId, now: this.#now(), abandon: this.#abandon.signal });
    let status: Settled;
    try {
      status = await this.#record(ctx, executionId, outcome);
    } catch (e) {
      if (databaseUnreachable(e)) this.#recordLater(ctx, executionId, outcome);
      throw e;
    }
    return { kind: 'decided', record, execution: { id: executionId, status } };
  }

  async #byNonce(projectId: string, nonce: string): Promise<ExecutionsTable | undefined> {
    return (await readFixed<ExecutionsTable>(this.#store, BY_NONCE, [projectId, nonce]))[0];
  }

  /** The nonce is bound: another action is refused, an in-flight one is 409, a settled one REPLAY. */
  async #repeat(ctx: DecideContext, row: ExecutionsTable, fingerprint: string): Promise<ExecutionResult> {
    if (row.fingerprint !== fingerprint) throw nonceReused();
    if (row.status === 'IN_FLIGHT') throw inProgress(row.id);
    const status = row.status as Settled;
    const auditId = await this.#writer.call('audit.record', {
      projectId: ctx.projectId, kind: 'execution.replay', actor: ctx.actor, at: ctx.now,
      data: { execution_id: row.id, decision_id: row.decision_id, request_id: ctx.requestId, nonce: row.nonce, status },
    });
    return { kind: 'replay', audit_id: auditId, policy_version: row.policy_version, execution: { id: row.id, status } };
  }

  /**
   * The decision's commit failed without saying whether it landed (its answer lost with the
   * connection): if the reservation did commit, it is settled FAILED, for this instance never
   * called the merchant and never will. Left IN_FLIGHT it would answer every repeat
   * `execution_in_progress` until the sweep took it for a call that may have acted (UNKNOWN, for a
   * person to resolve). A repeat of the nonce then replays FAILED; the spend stands, as for any
   * FAILED call. If the database stays away past the retries, the row is left to the sweep as before.
   */
  async #withdrawUnsent(ctx: DecideContext, id: string): Promise<void> {
    try {
      await this.#record(ctx, id, { status: 'FAILED', httpStatus: null, note: UNSENT_NOTE });
    } catch {
      // No such row (nothing committed), or the database still unreachable: the caller's 503 stands.
    }
  }

  /**
   * Records the call's outcome unless recovery already marked the row UNKNOWN (then that stands).
   * The merchant has acted by now: a dropped database connection (a restart, a failover) is retried
   * for a few seconds rather than leaving a known outcome to become UNKNOWN, for a person to
   * resolve. A retry after a commit whose answer was lost finds the outcome already recorded.
   */
  /**
   * The database stayed away past #record's few seconds: the caller has its 503, but the merchant's
   * answer is known, so it is kept trying in the background (2 s, doubling to 30 s, for up to
   * RECORD_LATER_MS, until shutdown) instead of leaving the row for the sweep to mark UNKNOWN, for a
   * person to resolve. If the sweep got there first, recordOutcome keeps it as a late outcome.
   */
  #recordLater(ctx: DecideContext, id: string, outcome: CallOutcome): void {
    const at = this.#now();
    const giveUpAt = performance.now() + RECORD_LATER_MS;
    const attempt = (delay: number) => setTimeout(() => {
      if (this.#abandon.signal.aborted) return;
      this.#writer.call('executions.record', { projectId: ctx.projectId, id, outcome, at }).catch((e: unknown) => {
        if (databaseUnreachable(e) && performance.now() + delay < giveUpAt) attempt(Math.min(delay * 2, 30_000));
      });
    }, delay).unref();
    attempt(2_000);
  }

  async #record(ctx: DecideContext, id: string, outcome: CallOutcome): Promise<Settled> {
    const at = this.#now();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#writer.call('executions.record', { projectId: ctx.projectId, id, outcome, at });
      } catch (e) {
        const delay = RECORD_RETRY_MS[attempt];
        if (delay === undefined || !databaseUnreachable(e)) throw e;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }
}

/** How long a known outcome the database would not take is kept trying after its caller's 503. */
const RECORD_LATER_MS = 10 * 60_000;

/** What a reservation whose decision's commit went unconfirmed is settled as: no byte was sent. */
export const UNSENT_NOTE = 'not delivered: the decision\'s commit was not confirmed (the database connection was lost), so no call was made';

/** What a reservation is settled as when this instance's heartbeat went stale before its call was sent. */
export const STALE_NOTE = 'not delivered: this instance was paused or cut off after the decision committed, long enough to be taken for dead, so no call was made';

/** Pauses between attempts to record an outcome the database did not take (about 6 s in all). */
const RECORD_RETRY_MS = [50, 200, 500, 1_000, 2_000, 2_000];

// Fixed SQL: these run once for every execution (store/fixed-sql.ts). The nonce lookup reads on
// SQLite's reader connection, so it never queues behind the HTTP thread's own writes.
const BY_NONCE = fixedSql('select * from executions where project_id = ? and nonce = ?');
const SET_OUTCOME = fixedSql(`update executions set status = ?, note = ?, http_status = ?, completed_at = ? where id = ? and status = 'IN_FLIGHT'`);

type OutcomeArgs = { projectId: string; id: string; outcome: CallOutcome; at: Date };
const outcomeData = ({ id, outcome }: OutcomeArgs) => ({ execution_id: id, status: outcome.status, http_status: outcome.httpStatus, note: outcome.note });

/** Writer procedure: the outcome of a call, audited; a row recovery already settled keeps its status. */
export async function recordOutcome(trx: Tx, args: OutcomeArgs, env: SqlTarget): Promise<Settled> {
  const { projectId, id, outcome, at } = args;
  const n = await execFixed(trx, env, SET_OUTCOME, [outcome.status, outcome.note, outcome.httpStatus, at.toISOString(), id]);
  const data = outcomeData(args);
  if (n === 1) {
    await recordAudit(trx, { projectId, kind: 'execution.outcome', actor: 'system', at, data }, env);
    return outcome.status;
  }
  // Recovery thought this instance dead and marked the row UNKNOWN; the merchant's answer is
  // kept in the audit log for whoever resolves it, and the row is left as it stands.
  const row = await trx.selectFrom('executions').select(['status', 'note', 'resolved_at']).where('id', '=', id).executeTakeFirstOrThrow();
  // This very outcome, recorded by an earlier attempt whose commit's answer was lost (recovery's
  // UNKNOWN carries its own note, a person's resolution a resolved_at): nothing is late.
  if (row.status === outcome.status && row.note === outcome.note && row.resolved_at === null) return row.status as Settled;
  await recordAudit(trx, { projectId, kind: 'execution.late_outcome', actor: 'system', at, data });
  return row.status as Settled;
}

/**
 * recordOutcome's one-statement form (store/group-commit.ts, Atomic), PostgreSQL only: the outcome
 * and its audit event in one autocommit statement, where the transaction takes four round trips.
 * Undefined, having written nothing, when the row is no longer in flight (the transaction then
 * records the late outcome) or on SQLite (whose writer batches share one transaction already).
 */
export async function recordOutcomeInOneStatement(db: Db | Tx, args: OutcomeArgs, env: SqlTarget): Promise<Settled | undefined> {
  if (env.dialect !== 'postgres') return undefined;
  const { projectId, id, outcome, at } = args;
  const recorded = await recordAuditWith(db, `${SET_OUTCOME.sqlite} returning id`, [outcome.status, outcome.note, outcome.httpStatus, at.toISOString(), id],
    { projectId, kind: 'execution.outcome', actor: 'system', at, data: outcomeData(args) });
  return recorded ? outcome.status : undefined;
}
