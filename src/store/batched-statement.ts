// Callers of one statement that arrive together share it. Rows submitted during one turn of the
// event loop leave as one multi-row statement: on PostgreSQL that is one round trip, one executor
// start and one commit (one WAL flush) for all of them, instead of one each. A statement that
// fails is run again row by row, so a row that cannot be written fails only its own caller; one
// whose connection was lost is not (it may have committed: every caller hears the loss, a 503).
// At low load nothing waits: a lone row leaves at the end of the turn it was submitted in.

import { databaseUnreachable } from './unreachable.ts';

export interface BatchedStatementOptions {
  /** Rows per statement at most (default 128). */
  maxRows?: number;
  /** Statements in flight at once (default 4): more rows wait and leave together after one returns. */
  maxInFlight?: number;
}

type Waiting<R, T> = { row: R; resolve: (value: T) => void; reject: (error: unknown) => void };

export class BatchedStatement<R, T> {
  readonly #run: (rows: readonly R[]) => Promise<readonly T[]>;
  readonly #maxRows: number;
  readonly #maxInFlight: number;
  #waiting: Waiting<R, T>[] = [];
  #inFlight = 0;
  #scheduled = false;

  /** `run` writes the rows in one statement and answers one result per row, in their order. */
  constructor(run: (rows: readonly R[]) => Promise<readonly T[]>, options: BatchedStatementOptions = {}) {
    this.#run = run;
    this.#maxRows = options.maxRows ?? 128;
    this.#maxInFlight = options.maxInFlight ?? 4;
  }

  /** Statements run so far (each may hold many rows), for tests and benchmarks. */
  statements = 0;

  submit(row: R): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ row, resolve, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      // At the end of this turn: every row submitted by requests handled in it joins.
      setImmediate(() => { this.#scheduled = false; this.#drain(); });
    });
  }

  #drain(): void {
    while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.#maxRows);
      this.#inFlight++;
      void this.#runBatch(batch).finally(() => { this.#inFlight--; this.#drain(); });
    }
  }

  async #runBatch(batch: Waiting<R, T>[]): Promise<void> {
    let results: readonly T[];
    try {
      results = await this.#runCounted(batch.map((w) => w.row));
    } catch (error) {
      // Lost with its connection, the statement may have committed (its answer lost, not its
      // work): run again, each row would meet its own ids and fail as a conflict (a 500), or be
      // written twice by a statement without unique ids. The loss is no row's fault either.
      if (batch.length === 1 || databaseUnreachable(error)) { for (const w of batch) w.reject(error); return; }
      await Promise.all(batch.map((w) => this.#runBatch([w])));
      return;
    }
    // A statement that ran but answered for other rows is a defect, not a failure to retry: what it
    // wrote stays written, so every caller hears of it.
    if (results.length !== batch.length) {
      const defect = new Error(`a batched statement answered ${results.length} results for ${batch.length} rows`);
      for (const w of batch) w.reject(defect);
      return;
    }
    batch.forEach((w, i) => w.resolve(results[i]!));
  }

  #runCounted(rows: readonly R[]): Promise<readonly T[]> {
    this.statements++;
    return this.#run(rows);
  }
}
