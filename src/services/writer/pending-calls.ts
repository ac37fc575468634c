// Calls sent to the writer thread and not yet answered, by the id their outcome comes back with.
//
// Not a Map. A Map that takes and drops an entry per request rehashes into a new table every few
// dozen calls, and V8 leaves each discarded table (kept for live iterators) holding the entries it
// had. Once such a table has been promoted, it keeps those calls (each call's promise, and through
// it the whole request) alive through young GCs until the next full GC, which promotes them too.
// Measured at 7k decisions/s on the HTTP thread: replacing the Map cut the old generation's growth
// about threefold, and with the permit cache's like change (permit-cache.ts) the full GCs, whose
// pauses made the half-load tail, went from one every ~1.6 s to none in 8 s (docs/performance.md,
// session 9). An array of slots reused through a free list never rehashes.

/**
 * An id is `serial * SLOTS + slot`: unique while its slot is reused, so an outcome that arrives
 * for a call already settled (one from a writer thread that died) finds nothing. The serial wraps
 * at SERIALS so ids stay exact integers (below 2^52) however long the process runs; two calls share
 * an id only 2^32 calls apart.
 */
const SLOTS = 2 ** 20;
const SERIALS = 2 ** 32;

export class PendingCalls<T> {
  readonly #calls: (T | undefined)[] = [];
  readonly #ids: number[] = [];
  readonly #free: number[] = [];
  #serial: number;
  #size = 0;

  /** `serial`: where the serial starts (tests of its wrap). */
  constructor(options: { serial?: number } = {}) {
    this.#serial = options.serial ?? 0;
  }

  get size(): number { return this.#size; }

  /** Holds `call` and returns its id (see SERIALS for how unique). */
  add(call: T): number {
    const slot = this.#free.pop() ?? this.#calls.length;
    if (slot >= SLOTS) throw new Error('too many writer calls in flight');
    this.#serial = (this.#serial + 1) % SERIALS;
    const id = this.#serial * SLOTS + slot;
    this.#calls[slot] = call;
    this.#ids[slot] = id;
    this.#size++;
    return id;
  }

  /** Removes and returns the call with this id; undefined if it was taken before or never given. */
  take(id: number): T | undefined {
    const slot = id % SLOTS;
    if (this.#ids[slot] !== id) return undefined;
    const call = this.#calls[slot];
    this.#calls[slot] = undefined;
    this.#ids[slot] = 0;
    this.#free.push(slot);
    this.#size--;
    return call;
  }

  /** The ids of every call held. */
  ids(): number[] {
    return this.#ids.filter((id) => id !== 0);
  }
}
