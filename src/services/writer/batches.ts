// How the SQLite writer thread runs units: one group committer on its connection, every batch
// ending with the log's work in the same transaction. Usually a batch's own audit events take
// their leaf indexes as they are written and its end appends them to the tree (auditlog/inline.ts);
// otherwise (events another connection wrote, a stale frontier) it sequences what waits.
import { createCommitter } from '../../store/group-commit.ts';
import type { Store, Tx } from '../../store/store.ts';
import type { SqlTarget } from '../../store/fixed-sql.ts';
import { sequenceWork } from '../auditlog/sequencer.ts';
import { installInlineSequencer } from '../auditlog/inline.ts';
import { installDecisionChecks } from '../authorize/one-statement.ts';

/** Bounds one batch's sequencing work; a backlog beyond it waits for the next batch or tick. */
const SEQUENCE_PER_BATCH = 256;

export interface WriterBatches {
  /**
   * `atomic`: the unit's one-statement form (store/group-commit.ts), tried first. `keepsChecks`:
   * the unit is a prepared decision, which leaves the decision checks the batch has found standing
   * (services/authorize/one-statement.ts); any other unit drops them before it runs.
   */
  run<T>(work: (trx: Tx, env: SqlTarget) => Promise<T>, atomic?: (trx: Tx, env: SqlTarget) => T | undefined | Promise<T | undefined>, keepsChecks?: boolean): Promise<T>;
  /** Batches committed, and how many of them sequenced inline. */
  readonly commits: number;
  readonly inlineBatches: number;
}

export function writerBatches(store: Store): WriterBatches {
  if (!store.raw) throw new Error('the writer thread runs on a SQLite connection');
  const env: SqlTarget = { dialect: store.dialect, raw: store.raw };
  const inline = installInlineSequencer(store.raw);
  const checks = installDecisionChecks();
  let inlined = false;
  let inlineBatches = 0;
  const committer = createCommitter(store, {
    beforeUnits: () => { inline.begin(); checks.clear(); },
    finishUnits: async (trx) => { inlined = await inline.finish(trx, new Date()); if (inlined) inlineBatches++; },
    // A batch that went inline has nothing left to sequence: no savepoint for nothing.
    wantsAfterUnits: () => !inlined,
    afterUnits: async (trx) => { await sequenceWork(trx, env, SEQUENCE_PER_BATCH, new Date()); },
    onError: (error) => process.emitWarning(`sequencing inside a writer batch failed; the audit-log loop retries: ${String(error)}`),
  });
  return {
    get commits() { return committer.commits; },
    get inlineBatches() { return inlineBatches; },
    run: (work, atomic, keepsChecks = false) => committer.run(async (trx) => {
      if (!keepsChecks) checks.clear();
      // A unit that fails is rolled back to its savepoint: so are the leaves it added.
      const mark = inline.mark();
      try { return await work(trx, env); } catch (error) { inline.rewind(mark); throw error; }
    }, atomic && ((trx) => { if (!keepsChecks) checks.clear(); return atomic(trx as Tx, env); })),
  };
}
