// The background loop of the audit log: sequence waiting events, sign a checkpoint when due, ask
// the witness to cosign it. On PostgreSQL several instances share one log and exactly one runs
// the loop: the one holding the session advisory lock on a dedicated connection. The lock dies
// with its connection (a crashed or SIGKILLed instance), and another instance takes over on its
// next tick. Correctness does not rest on the lock: each batch serializes on the state row.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../store/schema/index.ts';
import type { Signer } from '../../signer/signer.ts';
import type { Store } from '../../store/store.ts';
import { checkpointIfDue, witnessLatest, type CheckpointPolicy, type WitnessOutcome } from './checkpointer.ts';
import { checkContinuity, classifyWitnessOutcome, openRollback, ROLLED_BACK, type ContinuityCheck } from './continuity.ts';
import { ensureLogState } from './log.ts';
import { AuditLogError } from '../../domain/auditlog/errors.ts';
import { sequencePending, type SequenceBatch } from './sequencer.ts';

export interface AuditLogOptions extends CheckpointPolicy {
  /** Pause between ticks. */
  tickMs: number;
  /** The witness and its pinned cosignature/v1 key (config requires the key with the URL). */
  witness: { url: string; vkey: string } | undefined;
  witnessTimeoutMs?: number;
  /**
   * PostgreSQL: the leader's connection is closed by the server (and the lock with it) once it has
   * been idle this long. A healthy leader touches it every tick; one that stopped answering (a
   * network partition, a paused process) would otherwise keep the lock, and the log would stop for
   * every instance until the server's TCP keepalive noticed (two hours by default). Default: the
   * longer of 30 s and three ticks.
   */
  leaderIdleTimeoutMs?: number;
  now?: () => Date;
  onError?: (err: unknown) => void;
  /** A witness that refused, could not be reached, or answered without a valid cosignature. */
  onWitnessProblem?: (outcome: WitnessProblem) => void;
  /** Runs each sequencing batch; the service passes its writer so that the log's writes share the
   * decisions' commits (and fsyncs) and, on SQLite, run on the writer thread. */
  sequence?: SequenceBatch;
}

export type WitnessProblem = Extract<WitnessOutcome, { kind: 'refused' | 'unavailable' | 'invalid_cosignature' | 'conflict' | 'rolled_back' }>;

export interface TickResult {
  leader: boolean;
  sequenced: number;
  checkpoint: number | undefined;
  witness: WitnessOutcome | undefined;
  /** Whether the log still extends what it signed and the witness holds, when this tick asked. */
  continuity: ContinuityCheck | undefined;
}

/**
 * How often a leader asks whether the log still extends what was signed and witnessed (at start and
 * on becoming leader, then this often), and how soon again when the witness could not be reached.
 */
export const CONTINUITY_CHECK_MS = 60_000;
const CONTINUITY_RETRY_MS = 30_000;

const isProblem = (o: { kind: string } | undefined): o is WitnessProblem =>
  o !== undefined && ['refused', 'unavailable', 'invalid_cosignature', 'conflict', 'rolled_back'].includes(o.kind);

export interface AuditLogRunner {
  /** Runs one tick now (serialized with the loop); `force` signs a checkpoint even if not due. */
  tick(options?: { force?: boolean }): Promise<TickResult>;
  isLeader(): boolean;
  /** Settles once the loop's first tick has run (the start's continuity check included). */
  firstTick: Promise<void>;
  /**
   * Shutdown begins: the loop ticks no more, and a tick of the loop waiting on the witness stops
   * waiting (the forced tick that follows asks it again, within its own timeout), so that an
   * unresponsive witness cannot hold the stop past its bound.
   */
  halt(): void;
  stop(): Promise<void>;
}

// Advisory locks are per database, not per schema: scope the key by schema (tests share a database).
const LOCK = sql<{ ok: boolean }>`select pg_try_advisory_lock(hashtext(current_schema() || '/gavel-audit-log')) as ok`;

/** Leadership through a session advisory lock held on one pooled connection kept out of the pool. */
class PgLeadership {
  readonly #db: Kysely<Database>;
  readonly #idleTimeoutMs: number;
  #conn: Kysely<Database> | undefined;
  #release: (() => void) | undefined;
  #held: Promise<void> | undefined;
  constructor(db: Kysely<Database>, idleTimeoutMs: number) { this.#db = db; this.#idleTimeoutMs = idleTimeoutMs; }

  async ensure(): Promise<boolean> {
    if (this.#conn) {
      try { await sql`select 1`.execute(this.#conn); return true; } catch { this.drop(); return false; }
    }
    if (this.#held) return false;
    return new Promise<boolean>((resolve) => {
      this.#held = this.#db.connection().execute(async (conn) => {
        const r = await LOCK.execute(conn);
        if (!r.rows[0]?.ok) { resolve(false); return; }
        // The lease: a leader session that stops talking to the server loses the lock with it
        // (idle_session_timeout, PostgreSQL 14+; an older server leads without it); reset before the
        // connection goes back to the pool.
        await sql`select set_config('idle_session_timeout', ${String(Math.max(1, Math.round(this.#idleTimeoutMs)))}, false)`.execute(conn).catch(() => {});
        this.#conn = conn;
        resolve(true);
        // The lease is renewed on a timer, not by the ticks: a healthy leader's tick (a backlog of
        // sequencing batches, a slow witness) may outlast it while this connection sits idle. A
        // paused or partitioned leader renews nothing, and loses the lock as before.
        const renew = setInterval(() => { sql`select 1`.execute(conn).catch(() => this.drop()); }, Math.max(50, Math.floor(this.#idleTimeoutMs / 3)));
        renew.unref();
        try { await new Promise<void>((rel) => { this.#release = rel; }); } finally { clearInterval(renew); }
        this.#conn = undefined;
        await sql`select pg_advisory_unlock(hashtext(current_schema() || '/gavel-audit-log')), set_config('idle_session_timeout', '0', false)`.execute(conn).catch(() => {});
      }).catch(() => { resolve(false); }).finally(() => { this.#conn = undefined; this.#held = undefined; this.#release = undefined; });
    });
  }

  get leader(): boolean { return this.#conn !== undefined; }

  drop(): void { this.#conn = undefined; this.#release?.(); }

  async stop(): Promise<void> { this.drop(); await this.#held; }
}

export function startAuditLog(store: Store, signer: Signer, options: AuditLogOptions): AuditLogRunner {
  const now = options.now ?? (() => new Date());
  const leadership = store.dialect === 'postgres' ? new PgLeadership(store.db, options.leaderIdleTimeoutMs ?? Math.max(30_000, 3 * options.tickMs)) : undefined;
  let chain: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const recorded = { key: '', at: 0 };
  // 0: due now. At start, and again whenever this instance (re)gains the lead.
  let checkAt = 0;

  // Aborted by halt(): ends the loop's waits on the witness (explicit ticks have only their timeout).
  const halted = new AbortController();

  const once = async (forced: boolean, signal?: AbortSignal): Promise<TickResult> => {
    const leader = leadership ? await leadership.ensure() : true;
    if (!leader) { checkAt = 0; return { leader, sequenced: 0, checkpoint: undefined, witness: undefined, continuity: undefined }; }
    let force = forced;
    let continuity: ContinuityCheck | undefined;
    // A check further off than the longest wait: the clock stepped back since it was set. Waiting
    // for the clock to reach it would leave a rollback unnoticed for as long as the step.
    checkAt = Math.min(checkAt, now().getTime() + CONTINUITY_CHECK_MS);
    if (now().getTime() >= checkAt) {
      // A check that fails (or finds the witness unreachable) is tried again later, and never holds up sequencing.
      checkAt = now().getTime() + CONTINUITY_RETRY_MS;
      continuity = await checkContinuity(store, signer, options.witness, options.witnessTimeoutMs, signal).catch((e: unknown) => { options.onError?.(e); return undefined; });
      if (continuity && continuity.kind !== 'unavailable') checkAt = now().getTime() + CONTINUITY_CHECK_MS;
      // The log and the witness agree again (the right copy restored, say): the rollback is over.
      if (continuity?.kind === 'ok') await store.db.deleteFrom('audit_witness_problem').where('id', '=', 1).where('kind', '=', ROLLED_BACK).execute();
      // The witness holds a size the log reaches: a checkpoint submitted from there says whether it is the same history.
      if (continuity?.kind === 'witness_ahead') force = true;
    }
    let sequenced = 0;
    let cp: Awaited<ReturnType<typeof checkpointIfDue>>;
    let witness: WitnessOutcome | undefined;
    let failed: { error: unknown } | undefined;
    try {
      sequenced = await sequencePending(store, { now: now(), ...(options.sequence ? { sequence: options.sequence } : {}) });
      cp = await checkpointIfDue(store, signer, now(), options, force);
      witness = await witnessLatest(store, options.witness, now(), options.witnessTimeoutMs, signal);
    } catch (e) {
      // A node the tree's right edge or the consistency proof from the witnessed size needs is gone
      // (rows deleted, a partial restore): no checkpoint will be witnessed again. Recorded as such,
      // not thrown at every tick where nobody reads it.
      if (e instanceof AuditLogError && e.code === 'missing_node') {
        witness = { kind: ROLLED_BACK, reason: `the log lacks a node it needs to grow or to prove it extends its witnessed checkpoint (a partial restore, or deleted rows): ${e.message}` };
      } else if (e instanceof AuditLogError && e.code === 'state_mismatch') {
        witness = { kind: ROLLED_BACK, reason: e.message };
      } else failed = { error: e }; // Thrown once what the continuity check found is recorded: it may be the cause.
    }
    if (witness?.kind === 'conflict' || witness?.kind === 'refused') witness = classifyWitnessOutcome(witness, (await ensureLogState(store)).size);
    // A rollback found either way wins; an outage found by the check alone is not recorded (the
    // checkpointer records one when it has something to submit).
    // A wait cut short by halt() says nothing about the witness: nothing is recorded of it.
    const problem = signal?.aborted ? undefined : [continuity, witness].find((o) => o?.kind === 'rolled_back')
      ?? (isProblem(witness) ? witness : continuity?.kind !== 'unavailable' ? continuity : undefined);
    if (isProblem(problem)) {
      // Recorded when it changes, and at most once a minute while it stays the same (ticks are 100 ms apart).
      const key = `${problem.kind}:${'reason' in problem ? problem.reason : ''}:${'size' in problem ? problem.size : ''}`;
      const since = now().getTime() - recorded.at;
      if (key !== recorded.key || since >= 60_000 || since < 0) {
        await recordWitnessProblem(store, problem, now());
        recorded.key = key;
        recorded.at = now().getTime();
      }
      options.onWitnessProblem?.(problem);
    }
    if (failed) throw failed.error;
    return { leader, sequenced, checkpoint: cp?.size, witness, continuity };
  };

  const tick = (opts: { force?: boolean } = {}, signal?: AbortSignal): Promise<TickResult> => {
    const run = chain.then(() => once(opts.force ?? false, signal));
    chain = run.catch(() => {});
    return run;
  };

  let firstDone: () => void = () => {};
  const firstTick = new Promise<void>((resolve) => { firstDone = resolve; });
  const loop = () => {
    if (stopped) { firstDone(); return; }
    tick({}, halted.signal).catch((e) => options.onError?.(e)).finally(() => {
      firstDone();
      // unref: the loop alone never keeps a process alive (the HTTP server does).
      if (!stopped) timer = setTimeout(loop, options.tickMs).unref();
    });
  };
  timer = setTimeout(loop, 0).unref();

  return {
    tick: (opts) => tick(opts),
    isLeader: () => (leadership ? leadership.leader : true),
    firstTick,
    halt() {
      stopped = true;
      if (timer) clearTimeout(timer);
      halted.abort();
    },
    async stop() {
      stopped = true;
      firstDone();
      if (timer) clearTimeout(timer);
      await chain;
      await leadership?.stop();
    },
  };
}

/**
 * Keeps the witness's last refusal or absence where every instance reads it (the console
 * dashboard, services/dashboard/sections.ts); a later cosignature is what clears it there.
 */
async function recordWitnessProblem(store: Store, outcome: { kind: string; reason?: string; size?: number }, at: Date): Promise<void> {
  // A rollback stays what is shown until it is put right: a later refusal or outage is its consequence.
  if (outcome.kind !== ROLLED_BACK && await openRollback(store.db)) return;
  const row = {
    kind: outcome.kind,
    reason: outcome.reason ?? (outcome.size !== undefined ? `the witness holds size ${outcome.size}` : null),
    at: at.toISOString(),
  };
  await store.db.insertInto('audit_witness_problem').values({ id: 1, ...row })
    .onConflict((oc) => oc.column('id').doUpdateSet(row)).execute();
}
