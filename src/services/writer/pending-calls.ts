// Calls sent to the writer thread and not yet answered, by the id their outcome comes back with.
//
// Not a Map: a Map that gains and loses an entry per request keeps rehashing into new tables, and
// the discarded tables, promoted with the long-lived Map, still referenced the calls they held
// (each call's promise, and through it the whole request). Until the next full GC, old-space
// garbage like that keeps its young referents alive through every young GC. Measured at 7k
// decisions/s on the HTTP thread: about 6 MB/s promoted, and a full GC every ~1.6 s whose pauses
// made the half-load tail (docs/performance.md, session 9). An array of slots reused through a
// free list holds the same calls and never rehashes.

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
