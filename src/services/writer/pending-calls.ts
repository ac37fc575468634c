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

/** Slots per id: an id is `serial * SLOTS + slot`, unique over time while its slot is reused. */
const SLOTS = 2 ** 20;

export class PendingCalls<T> {
  readonly #calls: (T | undefined)[] = [];
  readonly #ids: number[] = [];
  readonly #free: number[] = [];
  #serial = 0;
  #size = 0;

  get size(): number { return this.#size; }

  /** Holds `call` and returns its id, never one given before. */
  add(call: T): number {
    const slot = this.#free.pop() ?? this.#calls.length;
    if (slot >= SLOTS) throw new Error('too many writer calls in flight');
    const id = ++this.#serial * SLOTS + slot;
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
