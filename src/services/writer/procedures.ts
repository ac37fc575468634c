// Every unit of work the writer runs, by name. A procedure takes plain data (it may cross to the
// SQLite writer thread) and runs inside the writer's transaction; see writer.ts.
import { commitDecision, type DecisionPlan } from '../authorize/commit.ts';
import { recordAudit, type AuditInput } from '../audit/record.ts';
import { recordOutcome, recordOutcomeInOneStatement } from '../executions/executions.ts';
import { sequenceWork } from '../auditlog/sequencer.ts';
import type { Procedure, ProcedureEnv, Writer } from './writer.ts';
import type { Db, Tx } from '../../store/store.ts';
import { commitPrepared, preparedDecisionText, type PreparedDecision } from '../authorize/one-statement.ts';
import type { TextCodecs } from './wire.ts';

export const procedures = {
  'authorize.commit': ((trx, plan: DecisionPlan, env) => commitDecision(trx, plan, env)),
  // The one statement of a decision prepared by the caller (one-statement.ts); false: nothing written.
  'authorize.commitPrepared': (async (trx, prepared: PreparedDecision, env) => commitPrepared(trx, env, prepared)),
  'audit.record': ((trx, input: AuditInput) => recordAudit(trx, input)),
  'executions.record': recordOutcome,
  'auditlog.sequence': ((trx, args: { max: number; now: Date }, env) => sequenceWork(trx, env, args.max, args.now)),
} satisfies Record<string, Procedure<never, unknown>>;

/**
 * Procedures with a one-statement form (store/group-commit.ts, Atomic): tried before the procedure
 * itself, which runs only if the one statement wrote nothing.
 */
export const atomicProcedures: { [K in keyof typeof procedures]?: (db: Db | Tx, args: Parameters<(typeof procedures)[K]>[1], env: ProcedureEnv) => Awaited<ReturnType<(typeof procedures)[K]>> | undefined | Promise<Awaited<ReturnType<(typeof procedures)[K]>> | undefined> } = {
  // Always an answer (true or false), so on SQLite it runs in the batch without a savepoint (and at once).
  'authorize.commitPrepared': (db, prepared, env) => commitPrepared(db, env, prepared),
  'executions.record': (db, args, env) => recordOutcomeInOneStatement(db, args, env),
};

export type GavelProcedures = typeof procedures;
export type GavelWriter = Writer<GavelProcedures>;

/**
 * Procedures whose arguments and results are JSON values (no Date, no bytes): their calls and
 * outcomes cross the thread boundary as JSON text (wire.ts). A plan's time is an ISO string.
 */
export const jsonProcedures: ReadonlySet<string> = new Set<keyof GavelProcedures>(['authorize.commit', 'authorize.commitPrepared']);

/**
 * Procedures that leave a writer batch's decision checks standing (batches.ts, decision 0020): a
 * prepared decision writes only its event. Any other unit makes the rest of its batch check afresh.
 */
export const checkKeepingProcedures: ReadonlySet<string> = new Set<keyof GavelProcedures>(['authorize.commitPrepared']);

/**
 * Procedures a background loop calls, which commit even when they find nothing to write: their
 * commit says nothing of whether the database can grow again (store/space.ts).
 */
export const spaceBlindProcedures: ReadonlySet<string> = new Set<keyof GavelProcedures>(['auditlog.sequence']);

/** Procedures whose calls cross as text of their own (wire.ts, TextCodec): the hot one. */
export const textProcedures: TextCodecs = { 'authorize.commitPrepared': preparedDecisionText };
