// A process that dies mid-call leaves its executions IN_FLIGHT. They become UNKNOWN, never
// re-sent (invariant 6). Which rows are orphaned (docs/executions.md "Recovery"):
// - rows owned by an instance whose heartbeat is stale (or that has no row): that instance is dead;
//   on SQLite only one process opens the file, so at start every other instance is dead;
// - rows older than their owner's longest merchant timeout plus a margin, whoever owns them: a live
//   instance gives up on a call after the timeout, so such a row means its outcome could not be
//   recorded. The owner's, stated beside its heartbeat: instances may hold different merchants files.
// Marking is a conditional update (`where status = 'IN_FLIGHT'`): if the owner was alive after all
// and records its outcome later, its update finds nothing and the UNKNOWN stands.
import { sql } from 'kysely';
import type { Store } from '../../store/store.ts';
import { affected } from '../../store/store.ts';
import { recordAudit } from '../audit/record.ts';
import { MAX_TIMEOUT_MS } from '../../merchants/config.ts';

export const HEARTBEAT_MS = 2_000;
export const STALE_AFTER_MS = 10_000;
export const AGE_MARGIN_MS = 60_000;

export const STOPPED_NOTE = 'the process making this call stopped mid-call: the merchant may or may not have acted';
export const TOO_OLD_NOTE = 'no outcome was recorded within the merchant timeout: the merchant may or may not have acted';

/**
 * The clock heartbeats are written and judged by. On PostgreSQL instances run on several hosts, whose
 * clocks may differ by more than STALE_AFTER_MS: judged by each one's own clock, an instance whose
 * clock runs behind would look dead to one ahead, and its calls in flight would be marked UNKNOWN
 * while it was making them. So there the database's clock decides; on SQLite one process serves.
 */
async function heartbeatClock(store: Store, now: Date): Promise<Date> {
  if (store.dialect !== 'postgres') return now;
  const { rows } = await sql<{ ms: string }>`select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as ms`.execute(store.db);
  return new Date(Number(rows[0]!.ms));
}

/** `maxTimeoutMs`: the longest timeout of this instance's merchants, by which others judge its calls too old. */
export async function beat(store: Store, instanceId: string, now: Date, maxTimeoutMs: number | null = null): Promise<void> {
  const at = (await heartbeatClock(store, now)).toISOString();
  await store.db.insertInto('execution_instances').values({ id: instanceId, started_at: at, heartbeat_at: at, max_timeout_ms: maxTimeoutMs })
    .onConflict((oc) => oc.column('id').doUpdateSet({ heartbeat_at: at, max_timeout_ms: maxTimeoutMs })).execute();
}

export async function retire(store: Store, instanceId: string): Promise<void> {
  await store.db.deleteFrom('execution_instances').where('id', '=', instanceId).execute();
}

/** How long a row has been in flight, in milliseconds. */
export type InFlightFor = (row: { id: string; created_at: string }) => number;
/** Whether the sweeper saw this instance's heartbeat change within STALE_AFTER_MS (its own clock). */
export type BeatSeen = (instance: { id: string; heartbeat_at: string }) => boolean;

/**
 * Marks orphaned IN_FLIGHT executions UNKNOWN, each audited; returns how many. `inFlightFor`: how
 * long each row has been in flight; by default its created_at against `now` (a one-off sweep), but a
 * running instance times what it watched (InstanceKeeper): a wall clock stepped forward is no time passed.
 */
export async function sweepInFlight(store: Store, opts: { instanceId: string; now: Date; maxTimeoutMs: number; startup: boolean; judgeOthers?: boolean; inFlightFor?: InFlightFor; beatSeen?: BeatSeen }): Promise<number> {
  const { instanceId, now } = opts;
  const inFlightFor = opts.inFlightFor ?? ((row) => now.getTime() - Date.parse(row.created_at));
  const judgeOthers = opts.judgeOthers ?? true;
  const everyOtherIsDead = opts.startup && store.dialect === 'sqlite';
  const staleBefore = new Date((await heartbeatClock(store, now)).getTime() - STALE_AFTER_MS).toISOString();
  // The rows before the live instances: a row's instance registered before it reserved the row, so it
  // is in the set read after; read the other way round, an instance that registered and reserved
  // between the two reads would be taken for dead.
  const rows = await store.db.selectFrom('executions').select(['id', 'project_id', 'instance_id', 'created_at'])
    .where('status', '=', 'IN_FLIGHT').execute();
  // Stale by the database's clock, and (for a keeper) not seen to change lately: a database clock
  // stepped forward makes every heartbeat look stale at once, though their instances beat on.
  const instances = everyOtherIsDead ? [] : await store.db.selectFrom('execution_instances').select(['id', 'heartbeat_at', 'max_timeout_ms']).execute();
  // A call is bounded by its owner's timeout: the sweeper's own for its rows, the one an instance
  // stated beside its heartbeat for others' (merchants files may differ), else the ceiling no
  // merchant timeout exceeds (an instance that states none, or whose row is gone).
  const timeoutOf = new Map(instances.map((i) => [i.id, i.max_timeout_ms === null ? MAX_TIMEOUT_MS : Number(i.max_timeout_ms)]));
  timeoutOf.set(instanceId, opts.maxTimeoutMs);
  const alive = new Set([instanceId]);
  for (const i of instances) {
    const seen = opts.beatSeen?.(i) ?? false; // asked of every instance: the keeper's watch follows them all
    if (seen || i.heartbeat_at >= staleBefore) alive.add(i.id);
  }
  let marked = 0;
  const at = now.toISOString();
  for (const row of rows) {
    const dead = judgeOthers && !alive.has(row.instance_id);
    const tooOld = inFlightFor(row) > (timeoutOf.get(row.instance_id) ?? MAX_TIMEOUT_MS) + AGE_MARGIN_MS;
    if (!dead && !tooOld) continue;
    const note = dead ? STOPPED_NOTE : TOO_OLD_NOTE;
    const done = await store.transaction(async (trx) => {
      const n = affected(await trx.updateTable('executions').set({ status: 'UNKNOWN', note, completed_at: at })
        .where('id', '=', row.id).where('status', '=', 'IN_FLIGHT').executeTakeFirst());
      if (n === 1) {
        await recordAudit(trx, { projectId: row.project_id, kind: 'execution.unknown', actor: 'system', at: now,
          data: { execution_id: row.id, instance_id: row.instance_id, note } });
      }
      return n;
    });
    marked += done;
  }
  // Dead instances with nothing left in flight are forgotten (none while others are not judged).
  if (!judgeOthers) return marked;
  if (!everyOtherIsDead) {
    const dead = instances.filter((i) => !alive.has(i.id)).map((i) => i.id);
    if (dead.length > 0) {
      await store.db.deleteFrom('execution_instances').where('id', 'in', dead).where('heartbeat_at', '<', staleBefore)
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom('executions').select(sql`1`.as('one'))
          .where('status', '=', 'IN_FLIGHT').whereRef('executions.instance_id', '=', 'execution_instances.id')))).execute();
    }
  } else {
    await store.db.deleteFrom('execution_instances').where('id', '!=', instanceId).execute();
  }
  return marked;
}

/** Heartbeat and periodic sweep for one running service instance. */
export class InstanceKeeper {
  readonly #store: Store;
  readonly #instanceId: string;
  readonly #maxTimeoutMs: number;
  readonly #now: () => Date;
  readonly #onMarked: (n: number) => void;
  #timer: NodeJS.Timeout | undefined;
  #tick: Promise<void> = Promise.resolve();
  /** When (performance.now()) the present run of beats began: none failed since, none came late. */
  #unbrokenSince: number | undefined;
  /** When the last beat succeeded (performance.now()); undefined after a failure. */
  #lastBeat: number | undefined;
  /** When (performance.now()) the newest beat that succeeded began: its heartbeat_at is no older. */
  #freshSince: number | undefined;
  /** A tick is running: the next one is skipped rather than queued behind it (see start). */
  #busy = false;
  /** Beats vouch() has begun: stop() waits for them, or one landing after retire() would bring the row back. */
  readonly #vouching = new Set<Promise<void>>();
  /**
   * When (performance.now()) a sweep of this keeper first saw each execution in flight. A row is too
   * old by the time watched, not by its created_at against the wall clock: a clock stepped forward
   * past the longest timeout made the next sweep mark a call the merchant was still answering
   * UNKNOWN. Rows the keeper has not watched that long (at start, say) wait for it.
   */
  readonly #watched = new Map<string, number>();
  /** Each instance's heartbeat as this keeper's sweeps last saw it, and when (performance.now()) it last changed. */
  readonly #beats = new Map<string, { at: string; since: number }>();

  /** onMarked: told how many rows a sweep after start marked UNKNOWN (start() returns its own count). */
  constructor(opts: { store: Store; instanceId: string; maxTimeoutMs: number; now: () => Date; onMarked?: (n: number) => void }) {
    this.#store = opts.store;
    this.#instanceId = opts.instanceId;
    this.#maxTimeoutMs = opts.maxTimeoutMs;
    this.#now = opts.now;
    this.#onMarked = opts.onMarked ?? (() => {});
  }

  /**
   * A sweep's `inFlightFor` and `beatSeen`, by this keeper's watch; rows no longer in flight and
   * instances gone are forgotten after it (`forget`). An instance first seen counts as seen beating:
   * it is judged once watched for STALE_AFTER_MS, as a starting keeper judges no one before that.
   */
  #watch(): { inFlightFor: InFlightFor; beatSeen: BeatSeen; forget(): void } {
    const at = performance.now();
    const rows = new Set<string>();
    const instances = new Set<string>();
    return {
      inFlightFor: (row) => {
        rows.add(row.id);
        let since = this.#watched.get(row.id);
        if (since === undefined) this.#watched.set(row.id, since = at);
        return at - since;
      },
      beatSeen: (instance) => {
        instances.add(instance.id);
        const last = this.#beats.get(instance.id);
        if (last?.at === instance.heartbeat_at) return at - last.since <= STALE_AFTER_MS;
        this.#beats.set(instance.id, { at: instance.heartbeat_at, since: at });
        return true;
      },
      forget: () => {
        for (const id of this.#watched.keys()) if (!rows.has(id)) this.#watched.delete(id);
        for (const id of this.#beats.keys()) if (!instances.has(id)) this.#beats.delete(id);
      },
    };
  }

  async #sweep(startup: boolean, judgeOthers: boolean): Promise<number> {
    const watch = this.#watch();
    const marked = await sweepInFlight(this.#store, { instanceId: this.#instanceId, now: this.#now(), maxTimeoutMs: this.#maxTimeoutMs, startup, judgeOthers, inFlightFor: watch.inFlightFor, beatSeen: watch.beatSeen });
    watch.forget();
    return marked;
  }

  /** Registers the instance and marks what dead instances left in flight, before serving. */
  async start(): Promise<number> {
    await this.#beat();
    // On PostgreSQL a starting instance has not watched the others beat: their heartbeats may be
    // stale because the database was unreachable to everyone (an outage it has just come back from),
    // not because they died. It judges them as an instance back from an outage does, once its own
    // run of beats, begun here, is longer than STALE_AFTER_MS. On SQLite it serves alone (the
    // serving lock), so every other instance is dead now.
    this.#lastBeat = this.#unbrokenSince = performance.now();
    const marked = await this.#sweep(true, this.#store.dialect !== 'postgres');
    this.#timer = setInterval(() => {
      // A database that hangs rather than refuses holds a tick for as long as its queries wait:
      // ticks are skipped meanwhile, not queued, so none run back to back when it answers again.
      if (this.#busy) return;
      this.#busy = true;
      this.#tick = this.#tick.then(async () => {
        try {
          try {
            await this.#beat();
          } catch (e) { this.#lastBeat = undefined; throw e; }
          // A beat that came late (the database hung, ticks were skipped) breaks the run as a failed
          // one does: everyone's heartbeat went stale meanwhile, not only the others'.
          const done = performance.now();
          if (this.#lastBeat === undefined || done - this.#lastBeat > 2 * HEARTBEAT_MS) this.#unbrokenSince = done;
          this.#lastBeat = done;
          // Another instance's stale heartbeat means it is dead only if this one could have seen it
          // beat: after an outage (or a spell in which this instance's own beats failed) every
          // heartbeat is stale, and the first instance back would otherwise mark the calls of all
          // the others, alive and reconnecting, UNKNOWN. So others are judged only once this
          // instance has beaten without a break for longer than a heartbeat takes to go stale,
          // measured in time (a count of beats is not time: beats can run back to back).
          const judgeOthers = done - this.#unbrokenSince! > STALE_AFTER_MS;
          const marked = await this.#sweep(false, judgeOthers);
          if (marked > 0) this.#onMarked(marked);
        } catch { /* the database is unreachable: try again on the next beat */ } finally { this.#busy = false; }
      });
    }, HEARTBEAT_MS);
    this.#timer.unref();
    return marked;
  }

  /**
   * Before this instance reserves a call: if its last beat is older than two heartbeats (the process
   * or its VM was paused, a beat failed), it beats now. Others may have judged it dead meanwhile, and
   * a call reserved under a stale heartbeat would be marked UNKNOWN by their next sweep while its
   * merchant answers. The beat commits before the reservation, and a sweep reads the rows in flight
   * before the live instances, so a sweep that sees the row sees the beat. `monotonicNow`: tests.
   */
  async vouch(monotonicNow = performance.now()): Promise<void> {
    if (this.#timer === undefined) return;
    if (this.#lastBeat !== undefined && monotonicNow - this.#lastBeat <= 2 * HEARTBEAT_MS) return;
    const beating = this.#beat();
    this.#vouching.add(beating);
    try { await beating; } finally { this.#vouching.delete(beating); }
  }

  /** One beat; once it has succeeded, the heartbeat it wrote is no older than its start (`fresh`). */
  async #beat(): Promise<void> {
    const began = performance.now();
    await beat(this.#store, this.#instanceId, this.#now(), this.#maxTimeoutMs);
    this.#freshSince = Math.max(this.#freshSince ?? began, began);
  }

  /**
   * Whether no other instance can have taken this one for dead yet: its newest heartbeat was
   * written less than half the staleness window ago. Asked after a reservation commits and before its
   * call is sent: an instance paused (a VM, a stall) while its COMMIT was answered may have had the
   * reservation marked UNKNOWN meanwhile, and must not send it then. `monotonicNow`: tests.
   */
  fresh(monotonicNow = performance.now()): boolean {
    // SQLite: one process serves the file; no other instance judges this one.
    if (this.#timer === undefined || this.#store.dialect !== 'postgres') return true;
    return this.#freshSince !== undefined && monotonicNow - this.#freshSince < STALE_AFTER_MS / 2;
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#tick;
    await Promise.allSettled(this.#vouching);
    try { await retire(this.#store, this.#instanceId); } catch { /* closing anyway */ }
  }
}
