// A database that cannot grow: its disk is full. Nothing is wrong with the request, and nothing of
// the failed transaction was kept (it rolled back); it may be retried once space is freed. SQLite
// says SQLITE_FULL; PostgreSQL 53100 disk_full (it could not extend a table's or index's file).
export function outOfSpace(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_FULL' || code === '53100';
}

/**
 * How long after a write refused for want of space the database counts as full (GET /readyz) if
 * no write commits meanwhile: an instance a load balancer took out of rotation gets no writes to
 * show that space is back, so it asks for traffic again after this, and a refusal starts it anew.
 */
export const FULL_FOR_MS = 5_000;

/**
 * Whether writes are failing for want of space. Marked where a request's failure is classified
 * (http/errors.ts) and by the audit log's loop (service.ts), cleared by the next unit of the writer (decisions, their events, execution
 * outcomes) that commits: background transactions (checkpoints, heartbeats, pruning) may commit
 * on a full disk, a page with room, and would clear it at every tick. A write's path reads one
 * number of it, and chains a promise only while it is marked (services/writer).
 */
export class SpaceWatch {
  #fullAt = 0;
  /** Told when writes start failing for want of space (`error`: the first such failure) and when one commits again. */
  onChange: (full: boolean, error?: unknown) => void = () => {};

  /** True between a write refused for want of space and the next that commits. */
  get marked(): boolean { return this.#fullAt !== 0; }

  // `now`: performance.now(), not the wall clock: stepped back an hour, that kept an instance out of
  // rotation (GET /readyz 503) for the hour after space was freed; stepped forward, it ended the window at once.
  /** The database counts as full: a write was refused for want of space within FULL_FOR_MS, and none committed since. */
  full(now = performance.now()): boolean { return this.#fullAt !== 0 && now - this.#fullAt < FULL_FOR_MS; }

  refused(error: unknown, now = performance.now()): void {
    const fresh = this.#fullAt === 0;
    this.#fullAt = now;
    if (fresh) this.onChange(true, error);
  }

  committed(): void {
    if (this.#fullAt === 0) return;
    this.#fullAt = 0;
    this.onChange(false);
  }

  /** `write`'s promise, clearing the mark when it commits, while marked (else `write` itself). */
  clearedBy<T>(write: Promise<T>): Promise<T> {
    if (this.#fullAt === 0) return write;
    return write.then((value) => { this.committed(); return value; });
  }
}
