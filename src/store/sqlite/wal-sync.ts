// Durability off the committing thread, for a store whose own connection writes (`flush`
// durability, store.ts): it commits with synchronous=NORMAL, so the commit's WAL frames are
// written (page cache) but not fsynced and COMMIT returns in microseconds. `durable()` then resolves
// once an fdatasync of the WAL file that began after that commit has finished. fdatasync runs on
// libuv's pool, so the event loop goes on meanwhile, and one fdatasync covers every commit made
// before it began. Frames reach the WAL in commit order, so a synced commit implies every earlier
// one is synced. Checkpoints keep SQLite's own ordering (NORMAL syncs the WAL before copying it and
// the database after). Nothing is acknowledged before its frames are on disk: invariant 1 holds as
// with FULL. The SQLite writer thread flushes with WalSyncNow, below, before it answers.
import { closeSync, fdatasyncSync, openSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

interface Waiter { gen: number; resolve: () => void; reject: (e: unknown) => void }

export class WalSync {
  readonly #walFile: string;
  #handle: Promise<FileHandle> | undefined;
  #requested = 0;
  #synced = 0;
  #running = false;
  #failed: unknown;
  #waiters: Waiter[] = [];
  /** fdatasync calls made (each covers every commit requested before it began). */
  syncs = 0;

  constructor(databaseFile: string) {
    this.#walFile = `${databaseFile}-wal`;
  }

  /** Resolves when every commit made before this call is on disk. */
  durable(): Promise<void> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    const gen = ++this.#requested;
    const p = new Promise<void>((resolve, reject) => this.#waiters.push({ gen, resolve, reject }));
    if (!this.#running) void this.#loop();
    return p;
  }

  async #loop(): Promise<void> {
    this.#running = true;
    try {
      while (this.#synced < this.#requested) {
        const target = this.#requested;
        try {
          // The WAL exists once the first commit has been made; SQLite keeps the same file (and
          // inode) while any connection is open, so one descriptor serves for the writer's life.
          this.#handle ??= open(this.#walFile, 'r');
          const fh = await this.#handle;
          await fh.datasync();
          this.syncs++;
          this.#synced = target;
          this.#settle((w) => w.gen <= target, (w) => w.resolve());
        } catch (error) {
          // After a failed fsync the kernel may have dropped the dirty pages and a retry could
          // "succeed" without writing them: nothing is acknowledged again until a restart.
          this.#failed = error;
          this.#synced = this.#requested;
          this.#settle(() => true, (w) => w.reject(error));
        }
      }
    } finally {
      this.#running = false;
    }
  }

  #settle(match: (w: Waiter) => boolean, fn: (w: Waiter) => void): void {
    const keep: Waiter[] = [];
    for (const w of this.#waiters) {
      if (match(w)) fn(w);
      else keep.push(w);
    }
    this.#waiters = keep;
  }

  async close(): Promise<void> {
    const h = this.#handle;
    this.#handle = undefined;
    if (h) await (await h).close().catch(() => {});
  }
}

/**
 * The same flush, synchronous, for the writer thread, which makes every batch durable before it
 * posts the batch's outcomes (services/writer/worker.ts, decision 0022): calls that arrive
 * meanwhile gather into its next batch. After a failure it refuses for good.
 */
export class WalSyncNow {
  readonly #walFile: string;
  #fd: number | undefined;
  #failed: unknown;

  constructor(databaseFile: string) {
    this.#walFile = `${databaseFile}-wal`;
  }

  /** Returns once every commit made before the call is on disk; throws, now and ever after, if it cannot say so. */
  sync(): void {
    if (this.#failed !== undefined) throw this.#failed;
    try {
      this.#fd ??= openSync(this.#walFile, 'r');
      fdatasyncSync(this.#fd);
    } catch (error) {
      this.#failed = error;
      throw error;
    }
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}
