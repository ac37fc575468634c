// Inline sequencing, on the SQLite writer thread only. The sequencer's usual path (sequencer.ts)
// writes an event with no leaf index, reads it back after the units of a batch, hashes it and sets
// its index: three statements and a re-serialization per event. Here the writer's own events take
// their leaf index in the INSERT and their leaf hash from the canonical text just built, and the
// batch's end appends those hashes to the tree (nodes, state) in the same transaction.
//
// This is sound only while the writer's events are exactly the next ones in seq order, so a batch
// goes inline only when, under the write lock, (a) the cached frontier matches the state row and
// (b) no event exists after the last one sequenced (sqlite_sequence). Any other batch takes the
// usual path. Each unit's leaves are rewound with its savepoint; the end re-checks that no event
// was written around the appender, and a failure there fails the whole batch (its events would
// otherwise carry indexes the state row does not count).
import type { StatementSource } from '../../store/sqlite/dialect.ts';
import type { Tx } from '../../store/store.ts';
import { appendToTree, frontierAt, LOCK_STATE, type Frontier } from './frontier.ts';
import { fromBlob } from './log.ts';
import type { SequencedBatch } from './sequencer.ts';

const TOP_SEQ = `select seq from sqlite_sequence where name = 'audit_events'`;

export class InlineSequencer {
  readonly #raw: StatementSource;
  #frontier: Frontier | undefined;
  #state: { size: number; root: Uint8Array } | undefined;
  // The batch's leaves, in seq order; added() keeps their seqs consecutive after the frontier's,
  // so the k-th has seq frontier.lastSeq + 1 + k.
  #leaves: Uint8Array[] = [];

  constructor(raw: StatementSource) { this.#raw = raw; }

  /** True between begin() and finish() of a batch that went inline. */
  get active(): boolean { return this.#frontier !== undefined; }

  #topSeq(): number {
    const row = this.#raw.prepare(TOP_SEQ).get() as { seq: number } | undefined;
    return Number(row?.seq ?? 0);
  }

  /** After BEGIN IMMEDIATE: goes inline if the frontier is current and nothing waits. */
  begin(): void {
    this.#frontier = undefined;
    this.#leaves = [];
    const row = this.#raw.prepare(LOCK_STATE.sqlite).get() as { size: number; root: Uint8Array } | undefined;
    if (!row) return;
    const state = { size: Number(row.size), root: fromBlob(row.root) };
    const frontier = frontierAt(state.size, state.root);
    if (frontier?.lastSeq === undefined || frontier.lastSeq !== this.#topSeq()) return;
    this.#state = state;
    this.#frontier = frontier;
  }

  /** The log as committed before this batch (what a sequencing call inside it reports). */
  committedState(): SequencedBatch {
    return { count: 0, size: this.#state!.size, root: this.#state!.root };
  }

  /** A statement on the writer's connection (inside the batch's transaction). */
  statement(sql: string): ReturnType<StatementSource['prepare']> { return this.#raw.prepare(sql); }

  /** The leaf index the next event takes. */
  nextLeafIndex(): number { return this.#state!.size + this.#leaves.length; }

  /** Records the event just inserted with nextLeafIndex(): its seq must follow the previous one. */
  added(seq: number, leafHash: Uint8Array): void {
    const expected = this.#lastSeq() + 1;
    if (seq !== expected) throw new Error(`inline sequencing expected seq ${expected}, the event got ${seq}`);
    this.#leaves.push(leafHash);
  }

  /** The seq of the batch's last event so far (the frontier's when it has none). */
  #lastSeq(): number { return this.#frontier!.lastSeq! + this.#leaves.length; }

  /** A unit's savepoint: mark before it runs, rewind if it is rolled back. */
  mark(): number { return this.#leaves.length; }
  rewind(mark: number): void { this.#leaves.length = mark; }

  /**
   * Before COMMIT: appends the batch's leaves (nodes, state row). Returns true if the batch was
   * inline (then nothing else waits); throws, failing the batch, if an event bypassed it.
   */
  async finish(trx: Tx, now: Date): Promise<boolean> {
    const frontier = this.#frontier;
    if (!frontier) return false;
    const last = this.#lastSeq();
    this.#frontier = undefined;
    if (this.#topSeq() !== last) throw new Error('an audit event was written around the inline sequencer');
    if (this.#leaves.length > 0) await appendToTree(trx, { dialect: 'sqlite', raw: this.#raw }, this.#state!.size, frontier.peaks, this.#leaves, now, last);
    return true;
  }
}

let current: InlineSequencer | undefined;

/** The writer thread installs its sequencer once; elsewhere there is none. */
export function installInlineSequencer(raw: StatementSource): InlineSequencer {
  current = new InlineSequencer(raw);
  return current;
}

export const inlineSequencer = (): InlineSequencer | undefined => current;
