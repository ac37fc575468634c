// The writer: the one way the hot path writes. A unit of work is a named procedure with plain-data
// arguments, so it can run where the writes are cheapest: on SQLite, in a dedicated worker thread
// that owns the write connection (its fsyncs, group commits, WAL checkpoints and statement work
// never block the thread answering HTTP); on PostgreSQL, here, through the per-unit committer.
// A caller's promise settles only after the transaction holding its unit is durable.
import type { Committer } from '../../store/group-commit.ts';
import type { Db, Tx } from '../../store/store.ts';
import type { SqlTarget } from '../../store/fixed-sql.ts';
import type { SpaceWatch } from '../../store/space.ts';

/** Where a procedure's fixed statements run (on SQLite, straight on the writer's connection). */
export type ProcedureEnv = SqlTarget;
/** A unit of work: runs inside the writer's transaction; arguments and result are plain data. */
export type Procedure<A = never, R = unknown> = (trx: Tx, args: A, env: ProcedureEnv) => Promise<R>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Procedures = Record<string, Procedure<any, any>>;

export interface Writer<P extends Procedures> {
  call<K extends keyof P & string>(name: K, args: Parameters<P[K]>[1]): Promise<Awaited<ReturnType<P[K]>>>;
  /** Units accepted and not yet settled. */
  readonly pending: number;
  /** Settles what is pending, then releases the writer (its thread, if any). */
  close(): Promise<void>;
}

/** A procedure's one-statement form (store/group-commit.ts, Atomic), if it has one. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AtomicProcedures = Record<string, ((db: Db | Tx, args: any, env: ProcedureEnv) => unknown) | undefined>;

/**
 * What a writer tells of space (store/space.ts): a unit that commits clears the mark, unless its
 * procedure is `blind` (one a background loop calls, which may commit without writing a page).
 */
export interface WriterSpace { watch: SpaceWatch; blind: ReadonlySet<string> }

/** `write`, clearing the full-disk mark when it commits, while one is set and `name` is not blind. */
export function clearingSpace<T>(space: WriterSpace | undefined, name: string, write: Promise<T>): Promise<T> {
  return space?.watch.marked && !space.blind.has(name) ? space.watch.clearedBy(write) : write;
}

/** Runs procedures in this thread through `committer` (PostgreSQL, or SQLite without a file). */
export function localWriter<P extends Procedures>(committer: Committer, procedures: P, env: ProcedureEnv, atomics: AtomicProcedures = {}, space?: WriterSpace): Writer<P> {
  let pending = 0;
  const idle: (() => void)[] = [];
  return {
    get pending() { return pending; },
    async call(name, args) {
      const proc = procedures[name];
      if (!proc) throw new Error(`unknown writer procedure ${name}`);
      pending++;
      try {
        const atomic = atomics[name];
        const run = committer.run((trx) => proc(trx, args as never, env), atomic && ((db) => atomic(db, args, env)));
        return await clearingSpace(space, name, run);
      } finally {
        if (--pending === 0) idle.splice(0).forEach((f) => f());
      }
    },
    close: () => (pending === 0 ? Promise.resolve() : new Promise<void>((resolve) => idle.push(resolve))),
  };
}
