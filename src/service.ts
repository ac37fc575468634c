// Assembles one running Gavel: store (migrated), signer, bootstrap, HTTP server.
import { closeSync, existsSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config/config.ts';
import { buildApp, type BuildOptions } from './http/app.ts';
import type { AppDeps } from './http/deps.ts';
import { systemClock, type Clock } from './lib/time.ts';
import { bootstrap, type AnnounceAdmin, type BootstrapResult } from './services/bootstrap.ts';
import { LocalSigner } from './signer/local.ts';
import { PinnedSigner } from './signer/pinned.ts';
import { ensureLogState, LOG_KEY } from './services/auditlog/log.ts';
import type { Signer } from './signer/signer.ts';
import { FOREIGN_DATABASE_REMEDY, ForeignDatabase, foreignEvidence, migrateToLatest } from './store/migrate.ts';
import { readUntouched, tablesOf } from './store/sqlite/read-untouched.ts';
import { openStore, type Store, type StoreOptions } from './store/store.ts';
import { createCommitter } from './store/group-commit.ts';
import { localWriter } from './services/writer/writer.ts';
import { threadWriter } from './services/writer/thread.ts';
import { atomicProcedures, jsonProcedures, procedures, spaceBlindProcedures, type GavelWriter } from './services/writer/procedures.ts';
import { Authorizer } from './services/authorize/authorize.ts';
import { loadMerchants, type MerchantRegistry } from './merchants/config.ts';
import { Executions } from './services/executions/executions.ts';
import { InstanceKeeper } from './services/executions/recovery.ts';
import { randomUUID } from 'node:crypto';
import { startAuditLog, type AuditLogRunner } from './services/auditlog/runner.ts';
import { startIdentityPruning, type IdentityPruner } from './services/identity/prune.ts';
import { takeServingLock } from './store/sqlite/serving-lock.ts';
import { repeatedFailureLog } from './http/repeated-failure-log.ts';
import { outOfSpace } from './store/space.ts';

export function storeOptions(config: Config): StoreOptions {
  return config.databaseUrl
    ? { kind: 'postgres', url: config.databaseUrl, replyTimeoutMs: config.databaseReplyTimeoutMs }
    : { kind: 'sqlite', file: join(config.dataDir, 'gavel.db') };
}

export class DatabaseMissing extends Error {}

/**
 * Refuses a SQLite data directory holding the log key but no database: one moved aside for a
 * restore and not put back. A first start there would make a new database, project and
 * administrator beside the old keys, as if nothing had been there. A directory in the database's
 * place is refused too: SQLite says only that it cannot open it (or, read-only, a disk I/O error).
 */
function refuseLostDatabase(where: StoreOptions, dataDir: string): void {
  if (where.kind === 'sqlite' && statSync(where.file, { throwIfNoEntry: false })?.isDirectory()) {
    throw new DatabaseMissing(`${where.file} is a directory, not a SQLite database: move it aside (GAVEL_DATA_DIR's database is the file gavel.db in it)`);
  }
  const keys = join(dataDir, 'keys');
  if (where.kind !== 'sqlite' || existsSync(where.file) || !existsSync(join(keys, `${LOG_KEY}.pem`))) return;
  throw new DatabaseMissing(`no database at ${where.file}, but ${keys} holds the signing keys of one: put the database back (README, "Backups and restores"), or move the keys aside too to start afresh`);
}

/** A SQLite database this user may not open as its command needs, said before SQLite says only "unable to open database file". */
export class DatabaseInaccessible extends Error {}

/**
 * Refuses a SQLite database (or its -wal or -shm file) that this user's permissions keep it from
 * reading, or from writing as well when `need` is 'write': one restored or made by another user
 * (root, say), or a mode changed; or one no user may write, marked immutable or append-only (EPERM)
 * or on a read-only file system (EROFS). SQLite's open says only "unable to open database file" or
 * "attempt to write a readonly database", which was reported as a data directory that cannot be
 * written, or as a migration that failed. Other failures are left to the open. Called
 * before this process opens the database: closing a descriptor of a file drops every POSIX lock
 * the process holds on it, SQLite's included.
 */
function refuseInaccessibleDatabase(where: StoreOptions, need: 'read' | 'write', command: string): void {
  if (where.kind !== 'sqlite' || where.file === ':memory:') return;
  for (const file of [where.file, `${where.file}-wal`, `${where.file}-shm`]) {
    try { closeSync(openSync(file, need === 'read' ? 'r' : 'r+')); } catch (e) {
      const cannot = `cannot ${need === 'read' ? 'read' : 'open for reading and writing'} ${file}`;
      switch ((e as NodeJS.ErrnoException).code) {
        case 'EACCES': throw new DatabaseInaccessible(`${cannot}: permission denied to this user (${thisUser()}): run ${command} as the user that runs gavel serve and owns the file (ls -l shows it), or give this user access to it (chown, chmod 600)`);
        case 'EPERM': throw new DatabaseInaccessible(`${cannot}: the file is marked immutable or append-only, which binds root too (lsattr shows an i or an a): clear it as root (chattr -i -a ${file})`);
        case 'EROFS': throw new DatabaseInaccessible(`${cannot}: it is on a read-only file system: mount it read-write, or copy the data directory (GAVEL_DATA_DIR) to a writable one`);
        default: continue;
      }
    }
  }
}

/**
 * Every check a command makes of a SQLite database before opening it, in order: not lost (keys
 * without their database), open to this user as `need` says, and not another application's.
 */
export function refuseUnusableDatabase(where: StoreOptions, dataDir: string, need: 'read' | 'write', command: string): void {
  refuseLostDatabase(where, dataDir);
  refuseInaccessibleDatabase(where, need, command);
  refuseForeignDatabase(where);
}

function thisUser(): string {
  try { return userInfo().username; } catch { return `uid ${process.getuid?.()}`; }
}

/**
 * Refuses a SQLite file of another application (store/migrate.ts, ForeignDatabase),
 * read through a connection that writes nothing: opening it as the store does would already write to
 * it (WAL mode, in its header). A file that cannot be read so is left to the store's own open to report.
 */
function refuseForeignDatabase(where: StoreOptions): void {
  if (where.kind !== 'sqlite' || where.file === ':memory:' || !existsSync(where.file)) return;
  let foreign: string | undefined;
  try {
    foreign = readUntouched(where.file, (file) => {
      const tables = tablesOf(file);
      const recorded = tables.includes('kysely_migration') ? file.prepare('select name from kysely_migration order by name').pluck().all() as string[] : undefined;
      return foreignEvidence(tables, recorded);
    });
  } catch { return; }
  if (foreign) throw new ForeignDatabase(where.file, foreign, FOREIGN_DATABASE_REMEDY.sqlite);
}

/** SQLite on a file: the writer thread owns the hot path's writes. Otherwise units run here. */
function createWriter(store: Store, onError: (err: unknown) => void, execArgv?: string[]): GavelWriter {
  const space = { watch: store.space, blind: spaceBlindProcedures };
  if (store.dialect === 'sqlite' && store.file && store.file !== ':memory:') return threadWriter({ file: store.file, onError, json: jsonProcedures, space, ...(execArgv ? { execArgv } : {}) });
  return localWriter(createCommitter(store), procedures, { dialect: store.dialect, raw: store.raw }, atomicProcedures, space);
}

/**
 * Logs a witness that did not cosign: a refusal or conflict as an error (it may be a fork: the
 * witness holds a checkpoint this log does not extend), an outage as a warning. The loop ticks ten
 * times a second, so the same outcome is logged again only after a minute (of performance.now():
 * a wall clock stepped back would silence a lasting problem for as long as the step).
 */
export function witnessProblemLog(app: Pick<FastifyInstance, 'log'>, witness: string | undefined): (outcome: { kind: string; reason?: string }) => void {
  let last = '';
  let at = 0;
  return (outcome) => {
    const key = `${outcome.kind}:${outcome.reason ?? ''}`;
    if (key === last && performance.now() - at < 60_000) return;
    last = key;
    at = performance.now();
    app.log[outcome.kind === 'unavailable' ? 'warn' : 'error']({ witness, outcome },
      outcome.kind === 'rolled_back' ? 'the audit log was rolled back: its witness will not cosign it again (docs/audit-log.md)' : 'the witness did not cosign the latest checkpoint');
  };
}

/**
 * Logs a failed pass of the audit log's loop (a database outage, a damaged store). The loop ticks
 * ten times a second and a lasting cause fails every tick: the same failure is logged again only
 * after a minute, with how many were not logged meanwhile; another failure, at once.
 */
export function tickFailureLog(app: Pick<FastifyInstance, 'log'>, now: () => number = () => performance.now()): (err: unknown) => void {
  return repeatedFailureLog(app.log, 'audit log tick failed', undefined, now);
}

/**
 * How long shutdown waits for merchant calls before giving them up: with the last checkpoint's
 * witness wait after it (5 s at most), within main.ts's 15 s.
 */
export const CALL_GRACE_MS = 8_000;

export interface Service {
  app: FastifyInstance;
  deps: AppDeps;
  bootstrap: BootstrapResult;
  /** The audit log's background sequencer/checkpointer (tick() runs one pass now). */
  auditLog: AuditLogRunner;
  /** Deletes finished sessions and throttle counters on a timer (run() prunes now). */
  identityPruning: IdentityPruner;
  /** Begins a stop's drain (GAVEL_SHUTDOWN_DRAIN_MS): /readyz answers 503 `shutting_down`, all else is served. */
  drain(): void;
  /** Stops accepting, finishes in-flight requests, then closes the store. */
  close(): Promise<void>;
}

export interface ServiceOptions extends BuildOptions {
  store?: Store;
  /** The SQLite serving lock, when the caller took it first (`gavel up` before its local witness). */
  servingLock?: { release(): void };
  signer?: Signer;
  clock?: Clock;
  merchants?: MerchantRegistry;
  /** Prints the first start's administrator password; called before its account commits (services/bootstrap.ts). */
  announceAdmin?: AnnounceAdmin;
  /** Tests: Node options of the SQLite writer thread (a probe preloaded with `--import`). */
  writerExecArgv?: string[];
}

export async function createService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  // A merchants file that will not do is refused before the data directory is made or locked.
  const merchants = options.merchants ?? loadMerchants(config.merchantsFile);
  // Before anything reads or recovers: one serving process per SQLite database (store/sqlite/serving-lock.ts).
  const where = storeOptions(config);
  if (!options.store) refuseUnusableDatabase(where, config.dataDir, 'write', 'gavel');
  const servingLock = options.servingLock ?? (!options.store && where.kind === 'sqlite' ? takeServingLock(where.file) : undefined);
  try {
    return await assemble(config, options, merchants, where, servingLock);
  } catch (e) {
    servingLock?.release();
    throw e;
  }
}

async function assemble(config: Config, options: ServiceOptions, merchants: MerchantRegistry, where: StoreOptions, servingLock: { release(): void } | undefined): Promise<Service> {
  const store = options.store ?? openStore(where);
  const migrated = await migrateToLatest(store);
  const signer = new PinnedSigner(options.signer ?? new LocalSigner(join(config.dataDir, 'keys')), store.db);
  // Any instance may come to sign checkpoints (the sequencer's leader): refuse to start without the log's key.
  await signer.assertHeld(LOG_KEY);
  // Nor over a log whose state row was lost (a partial restore): it would begin a second log.
  await ensureLogState(store);
  let logError: (err: unknown) => void = () => {};
  const writer = createWriter(store, (err) => logError(err), options.writerExecArgv);
  const authorizer = new Authorizer({ store, signer, writer });
  const clock = options.clock ?? systemClock;
  // Executions left in flight by a dead process become UNKNOWN before this one serves.
  const instanceId = randomUUID();
  let onMarked: (n: number) => void = () => {};
  const keeper = new InstanceKeeper({ store, instanceId, maxTimeoutMs: merchants.maxTimeoutMs, now: () => clock.now(), onMarked: (n) => onMarked(n) });
  const recovered = await keeper.start();
  const executions = new Executions({ store, writer, merchants, instanceId, now: () => clock.now(), vouch: () => keeper.vouch(), fresh: () => keeper.fresh() });
  const deps: AppDeps = { config, store, signer, clock, writer, authorizer, merchants, executions };
  const boot = await bootstrap(store, new Date(), options.announceAdmin);
  const app = await buildApp(deps, options);
  // An upgrade's record of what it changed in the database (gavel migrate prints the same list).
  if (migrated.length > 0) app.log.info({ migrations: migrated }, 'applied database migrations');
  logError = (err) => app.log.error({ err }, 'the writer thread stopped; pending units failed, the next call starts a new one');
  // Once per episode, not once per refused request (store/space.ts, decision 0027).
  store.space.onChange = (full, err) => {
    if (full) app.log.error({ err }, 'the database\'s disk is full: writes are refused (503 storage_full) and /readyz answers 503 until space is freed');
    else app.log.warn('a write committed again after the database\'s disk was full: writes are accepted and /readyz is ready');
  };
  // A person has to resolve these (invariant 6): said where an operator looks first.
  // On PostgreSQL most are found after start, by the periodic sweep (recovery.ts): said the same way.
  onMarked = (n) => app.log.warn({ executions: n }, 'executions left in flight (by a stopped process, or with no outcome recorded within the merchant timeout) are now UNKNOWN; resolve them (GET …/executions?status=UNKNOWN)');
  if (recovered > 0) onMarked(recovered);
  const tickFailed = tickFailureLog(app);
  const auditLog = startAuditLog(store, signer, {
    tickMs: config.auditTickMs, intervalMs: config.checkpointIntervalMs, maxEvents: config.checkpointMaxEvents,
    witness: config.witnessUrl && config.witnessVkey ? { url: config.witnessUrl, vkey: config.witnessVkey } : undefined,
    now: () => deps.clock.now(), sequence: (max, now) => writer.call('auditlog.sequence', { max, now }),
    // A checkpoint refused for want of space is tried at every tick: the full disk is logged once (store/space.ts).
    onError: (err) => { if (outOfSpace(err)) store.space.refused(err); else tickFailed(err); },
    onWitnessProblem: witnessProblemLog(app, config.witnessUrl),
  });
  // Finished throttle counters and sessions are deleted every hour, in bounded runs (services/identity/prune.ts).
  const identityPruning = startIdentityPruning(store, () => deps.clock.now(),
    (err) => app.log.warn({ err }, 'pruning finished sessions and throttle counters failed'));
  let closing: Promise<void> | undefined;
  return {
    app, deps, bootstrap: boot, auditLog, identityPruning,
    drain() { app.draining = true; },
    close() {
      closing ??= (async () => {
        // Keep-alive sockets of requests that were in flight become idle only once answered;
        // close them as they do, or the server would wait for the clients' keep-alive timeout.
        const pruned = identityPruning.stop();
        const idle = setInterval(() => app.server.closeIdleConnections?.(), 50);
        // A merchant may be given up to 2 minutes (merchants/config.ts), longer than a supervisor
        // waits for a stop: calls still unanswered after CALL_GRACE_MS are given up as UNKNOWN and
        // recorded, so that their callers get an answer and the process its clean exit.
        const abandon = setTimeout(() => executions.abandonCalls(), CALL_GRACE_MS);
        auditLog.halt();
        try { await app.close(); } finally { clearInterval(idle); clearTimeout(abandon); }
        // Every event the stopped server answered for is sequenced and under a signed (and, if a
        // witness answers, witnessed) checkpoint before it exits, not only after the next start.
        await auditLog.tick({ force: true }).catch((err: unknown) => app.log.warn({ err }, 'the last checkpoint before stopping failed'));
        await auditLog.stop();
        await pruned; // its current batch, before the store closes under it
        await writer.close();
        await keeper.stop();
        if (!options.store) await store.close();
        servingLock?.release();
      })();
      return closing;
    },
  };
}

