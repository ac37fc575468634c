#!/usr/bin/env -S node --max-semi-space-size=16 --max-old-space-size=256 --v8-pool-size=1 --no-allocation-site-pretenuring
// gavel: one entry, one subcommand per process of DESIGN.md ("Processes").
import { type Config, ConfigError, isLoopbackHost, readConfiguration, redactConfig, type UnknownVariable } from '../config/config.ts';
import { createService, DatabaseInaccessible, DatabaseMissing, refuseUnusableDatabase, storeOptions } from '../service.ts';
import { MigrationError, migrateToLatest } from '../store/migrate.ts';
import { openStore } from '../store/store.ts';
import { writeLockHeld } from '../store/sqlite/dialect.ts';
import { join } from 'node:path';
import { readFileSync, writeSync } from 'node:fs';
import { LocalSigner, SigningKeyDamaged } from '../signer/local.ts';
import { LOG_KEY, LogStateMissing, logIdentity } from '../services/auditlog/log.ts';
import { openRollback } from '../services/auditlog/continuity.ts';
import { runWitnessCommand, WITNESS_USAGE, WitnessUsageError } from '../witness/main.ts';
import { WitnessKeyDamaged } from '../witness/key.ts';
import { WitnessDatabaseRefused } from '../witness/store.ts';
import { LocalWitnessFailed, superviseLocalWitness, type LocalWitness } from './local-witness.ts';
import { AUDIT_VERIFY_USAGE, runAuditVerify } from './audit-verify.ts';
import { AUDIT_CONSISTENCY_USAGE, runAuditConsistency } from './audit-consistency.ts';
import { loadMerchants } from '../merchants/config.ts';
import { DataDirInUse, takeServingLock } from '../store/sqlite/serving-lock.ts';
import { PinnedSigner, SigningKeyMismatch } from '../signer/pinned.ts';
import { BACKUP_USAGE, BackupRefused, runBackup } from './backup.ts';
import { RESET_PASSWORD_USAGE, ResetRefused, runResetPassword } from './reset-password.ts';
import { warnIfFileLimitBelowCap } from '../http/connection-cap.ts';
import { servedOverTls } from '../http/auth/session.ts';
import { nodeTooOld } from './node-version.ts';
import { startMemoryTrim } from '../lib/memory-trim.ts';

const CONFIGURATION = `configuration: GAVEL_HOST, GAVEL_PORT, GAVEL_DATA_DIR, GAVEL_DATABASE_URL, GAVEL_DATABASE_REPLY_TIMEOUT_MS,
GAVEL_LOG_LEVEL, GAVEL_BODY_LIMIT_BYTES, GAVEL_REQUEST_TIMEOUT_MS, GAVEL_MAX_CONNECTIONS, GAVEL_SHUTDOWN_DRAIN_MS,
GAVEL_WITNESS_URL, GAVEL_WITNESS_PORT, GAVEL_WITNESS_VKEY, GAVEL_CHECKPOINT_INTERVAL_MS,
GAVEL_CHECKPOINT_MAX_EVENTS, GAVEL_AUDIT_TICK_MS, GAVEL_MERCHANTS_FILE, GAVEL_PUBLIC_URL, GAVEL_TRUST_PROXY,
or a JSON file named by GAVEL_CONFIG (keys in snake_case, e.g. {"port": 7400}; README "Configuration").`;

/** Each command's own usage, for `gavel <command> --help` (the others' live beside their commands). */
const COMMAND_USAGE: Record<'up' | 'serve' | 'migrate', string> = {
  up: `usage: gavel up

The embedded default (npm start): the API and console on GAVEL_HOST:GAVEL_PORT (127.0.0.1:7400), the
database (SQLite under GAVEL_DATA_DIR, ./data, unless GAVEL_DATABASE_URL names PostgreSQL), and a
local witness in a child process on GAVEL_WITNESS_PORT. The first start prints the admin password
once. Takes no arguments; stops on SIGTERM, SIGINT or SIGHUP.

${CONFIGURATION}`,
  serve: `usage: gavel serve

The API and console only, on GAVEL_HOST:GAVEL_PORT (127.0.0.1:7400), over the database (SQLite under
GAVEL_DATA_DIR, ./data, unless GAVEL_DATABASE_URL names PostgreSQL); no witness is started
(GAVEL_WITNESS_URL and GAVEL_WITNESS_VKEY name one). Takes no arguments; stops on SIGTERM, SIGINT or SIGHUP.

${CONFIGURATION}`,
  migrate: `usage: gavel migrate

Applies every database migration not yet applied (SQLite under GAVEL_DATA_DIR, ./data, unless
GAVEL_DATABASE_URL names PostgreSQL) and exits. Takes no arguments; every start migrates too.`,
};

const USAGE = `usage: gavel <command>

commands:
  up        the embedded default: API and console on loopback, SQLite under ./data (npm start)
  serve     the API and console only
  migrate   apply pending database migrations and exit
  backup <file> [--force]
            a consistent copy of the SQLite database, taken while the server runs (PostgreSQL: pg_dump)
  reset-password <person name>
            a new random password for a person, printed once; ends the person's console sessions
            (works while the server runs)
  witness   the C2SP tlog-witness (gavel witness --help for flags)
  audit verify <proof.json> --log-key VKEY --witness-key VKEY
            check an exported audit proof offline, with public keys alone
  audit consistency <consistency.json> --log-key VKEY [--witness-key VKEY]
            check offline that the log only grew between two checkpoints
  --version print gavel's version (also -v) and exit

${CONFIGURATION}`;

/**
 * A failure an operator fixes in the environment (a port, a host, the database), in one line;
 * undefined for anything else, whose stack is printed as a fault of the service.
 */
function startupProblem(e: unknown): string | undefined {
  const err = e as Error & { code?: string; address?: string; port?: number; hostname?: string; syscall?: string; path?: string };
  const at = err.address ? `${err.address}${err.port ? `:${err.port}` : ''}` : '';
  // `gavel witness` is set by its flags, not by the service's variables.
  const dataDir = command === 'witness' ? '--data-dir' : 'GAVEL_DATA_DIR';
  const host = command === 'witness' ? '--host' : 'GAVEL_HOST';
  switch (err.code) {
    case 'EADDRINUSE': return `cannot listen on ${at}: the port is in use (${command === 'witness' ? '--port' : "GAVEL_PORT, or GAVEL_WITNESS_PORT for gavel up's witness"})`;
    case 'EADDRNOTAVAIL': return `cannot listen on ${at}: no such address on this machine (${host})`;
    case 'EEXIST': case 'ENOTDIR': return `cannot create the directory ${err.path ?? ''}: a file of that name is in the way (${dataDir} must be a directory, or a path where one can be made)`;
    // mkdir -p names the directory it was asked for when a component of its path is a symlink to
    // nothing (a volume not mounted) or, on a read-only file system, one not there.
    case 'ENOENT': if (err.syscall !== 'mkdir') return undefined;
      return `cannot create the directory ${err.path ?? ''}: a directory on its path leads nowhere or cannot be written (a symlink to nothing, a read-only file system; ${dataDir} must be a directory, or a path where one can be made)`;
    case 'EACCES': case 'EROFS': return err.syscall === 'listen' ? `cannot listen on ${at}: permission denied (ports below 1024 need privileges)`
      : `cannot write ${err.path ?? 'the data directory'}: ${err.code === 'EROFS' ? 'read-only file system' : 'permission denied'} (${dataDir} must be writable by this user)`;
    case 'ENOTFOUND': case 'EAI_AGAIN': return `cannot resolve the host name "${err.hostname ?? ''}" (${command === 'witness' ? '--host' : 'GAVEL_HOST or GAVEL_DATABASE_URL'})`;
    // A server that resets rather than closes (one that hung up while our startup packet was in
    // flight, a pooler or firewall turning us away): the same as a close. Only commands that reach
    // the database get here; the witness has none.
    case 'ECONNRESET': return command === 'witness' ? undefined : HUNG_UP;
    case 'ECONNREFUSED': return `cannot connect to the database${at ? ` at ${at}` : ''}: connection refused (is PostgreSQL running? GAVEL_DATABASE_URL)`;
    case '3D000': case '28P01': case '28000': case '42501': return `the database refused the connection: ${err.message} (GAVEL_DATABASE_URL)`;
    case 'SQLITE_CANTOPEN': case 'SQLITE_READONLY': case 'SQLITE_PERM': return `cannot open the SQLite database for writing (${err.message}): ${dataDir} must be a writable directory`;
    // Past the retries of store/sqlite/dialect.ts: a write outside the migrations (the first start's, a reset's).
    case 'SQLITE_BUSY': return writeLockHeld(`the SQLite database in ${dataDir}`);
    case 'SQLITE_NOTADB': case 'SQLITE_CORRUPT': return `the SQLite database in ${dataDir} is not a Gavel database or is damaged (${err.message})`;
    default:
      // Any other refusal by the server at connect time (55000 the database does not allow
      // connections now, 53300 too many connections, 57P03 starting up): FATAL, and one line.
      if ((err as { severity?: string }).severity === 'FATAL') return `the database refused the connection: ${err.message} (GAVEL_DATABASE_URL)`;
      // A certificate that does not verify (OpenSSL's X509 codes, Node's name check); Node's hint
      // about --use-system-ca is cut: node-postgres takes its CA from sslrootcert.
      if (/CERT|SIGNED|ISSUER|UNABLE_TO_VERIFY/.test(err.code ?? '')) return `cannot verify the database's TLS certificate (${err.code}: ${err.message.split(';')[0]}): name the CA that signed it with sslrootcert in GAVEL_DATABASE_URL`;
      if (err.message === 'The server does not support SSL connections') return 'the database does not accept TLS connections, which GAVEL_DATABASE_URL asks for (sslmode): enable TLS on the server, or set sslmode=disable';
      if (/^timeout exceeded when trying to connect/.test(err.message ?? '')) return 'cannot connect to the database: it did not answer in time (GAVEL_DATABASE_URL)';
      // node-postgres's words for a server that hung up: at connect, a server other than PostgreSQL
      // (an HTTP port) or one turning the client away without a reason; later, one that stopped.
      if (err.message === 'Connection terminated unexpectedly') return HUNG_UP;
      return undefined;
  }
}

const HUNG_UP = "the database server closed the connection (is GAVEL_DATABASE_URL's host and port a PostgreSQL server that accepts this client? it may also have stopped)";

const HELP = ['--help', '-h', 'help'];

/**
 * A command's usage asked for: `help` as its first argument, or --help or -h among its options
 * (before any `--`, after which every argument is a name or a file).
 */
function asksHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return HELP.includes(args[0] ?? '') || (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** package.json's version: two directories up from src/cli and from dist/cli alike. */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

function fail(message: string): never {
  process.stderr.write(`gavel: ${message}\n`);
  process.exit(2);
}

/**
 * `gavel up` without GAVEL_WITNESS_URL: a local witness on loopback (data under <dataDir>/witness)
 * that trusts this installation's log key, so checkpoints are witnessed out of the box. It runs in
 * a process of its own (cli/local-witness.ts).
 */
async function localWitness(config: Config, say: { warn(msg: string): void; error(msg: string): void }): Promise<LocalWitness> {
  const store = openStore(storeOptions(config));
  try {
    await migrateToLatest(store);
    // The key the database recorded, or none: a witness trusting a key of this directory's own would
    // leave its files behind when the service then refuses that key (signer/pinned.ts).
    const signer = new PinnedSigner(new LocalSigner(join(config.dataDir, 'keys')), store.db);
    await signer.assertHeld(LOG_KEY);
    const id = await logIdentity(store, signer);
    return await superviseLocalWitness({ dataDir: join(config.dataDir, 'witness'), port: config.witnessPort, origin: id.origin, vkey: id.vkey }, say);
  } finally {
    await store.close();
  }
}

/**
 * The first start's administrator password, written before its account commits (services/bootstrap.ts)
 * and synchronously, so that no later failure or kill of this start can lose it.
 */
function announceAdmin(admin: { name: string; password: string }): void {
  writeSync(1, `First start: log in as "${admin.name}" with this generated password. It is printed this once and stored only as a hash; keep it:\n  ${admin.password}\n\n`);
}

async function serve(embedded: boolean): Promise<void> {
  // Warned about in the service's log, once it has one; on stderr if the start fails before that,
  // since a misspelt variable is often why it failed.
  const unknown: UnknownVariables = { variables: [], logged: false };
  try {
    await start(embedded, unknown);
  } catch (e) {
    if (!unknown.logged) for (const [message] of unknown.variables) process.stderr.write(`gavel: ${message}\n`);
    throw e;
  }
}

interface UnknownVariables { variables: [string, UnknownVariable][]; logged: boolean }

async function start(embedded: boolean, unknown: UnknownVariables): Promise<void> {
  let config = readConfiguration((message, variable) => unknown.variables.push([message, variable]));
  // Else the witness takes the port first and the service fails on it, after its first start made the administrator.
  if (embedded && !config.witnessUrl && config.port !== 0 && config.port === config.witnessPort) {
    throw new ConfigError('GAVEL_WITNESS_PORT', `is GAVEL_PORT's port too (${config.port}): gavel up runs its local witness on a port of its own`);
  }
  // A merchants file that will not do is refused like any bad setting, before anything is made.
  const merchants = loadMerchants(config.merchantsFile);
  // The data directory holds password, key and session hashes beside the private keys: everything
  // this process creates there is its owner's alone (files 0600, directories 0700), as the keys were.
  process.umask(0o077);
  // The serving lock first: a second server on this database stops before it migrates anything or
  // starts a witness on the same files (store/sqlite/serving-lock.ts).
  const where = storeOptions(config);
  refuseUnusableDatabase(where, config.dataDir, 'write', `gavel ${embedded ? 'up' : 'serve'}`);
  const servingLock = where.kind === 'sqlite' ? takeServingLock(where.file) : undefined;
  let witness: LocalWitness | undefined;
  let service: Awaited<ReturnType<typeof createService>>;
  // The witness's exits and restarts, told in the service's log once it runs (before, on stderr).
  let say: { warn(msg: string): void; error(msg: string): void } = { warn: (msg) => process.stderr.write(`gavel: ${msg}\n`), error: (msg) => process.stderr.write(`gavel: ${msg}\n`) };
  try {
    witness = embedded && !config.witnessUrl ? await localWitness(config, { warn: (m) => say.warn(m), error: (m) => say.error(m) }) : undefined;
    if (witness) config = { ...config, witnessUrl: witness.url, witnessVkey: witness.publicKeyVkey };
    service = await createService(config, { ...(servingLock ? { servingLock } : {}), merchants, announceAdmin });
  } catch (e) {
    await witness?.close().catch(() => {});
    servingLock?.release();
    throw e;
  }
  const { app } = service;
  say = { warn: (msg) => app.log.warn(msg), error: (msg) => app.log.error(msg) };
  app.log.info({ config: redactConfig(config) }, 'configuration');
  for (const [message, { name, meant }] of unknown.variables) app.log.warn({ variable: name, ...(meant ? { meant } : {}) }, message);
  unknown.logged = true;
  warnIfFileLimitBelowCap(app, config.maxConnections);
  // What threads freed goes back to the system (lib/memory-trim.ts); nothing else depends on it.
  await startMemoryTrim({ onUnavailable: (err) => app.log.info({ err }, 'freed memory is not trimmed here (no glibc malloc_trim reachable); the service runs the same') });
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (e) {
    await service.close().catch(() => {});
    await witness?.close().catch(() => {});
    // The account this first start created stays; its password was printed above, this once.
    if (service.bootstrap.admin) process.stderr.write(`gavel: the administrator "${service.bootstrap.admin.name}" was created with the password printed above; it stays valid and is not printed again\n`);
    throw e;
  }
  // As soon as it listens, before the rest of the start (the audit log's first pass may wait on its
  // witness): requests are served from here on, so a signal must let them finish, not kill them.
  let stopping = false;
  let endDrain: (() => void) | undefined;
  const stop = (signal: string) => {
    // A second signal during the drain ends it; after it, a second signal changes nothing.
    if (stopping) { endDrain?.(); return; }
    stopping = true;
    const close = () => {
      endDrain = undefined;
      app.log.info({ signal }, 'shutting down: finishing in-flight requests');
      const force = setTimeout(() => { app.log.error('shutdown took too long; exiting'); process.exit(1); }, 15_000);
      force.unref();
      service.close().then(() => witness?.close()).then(() => process.exit(0), (e) => { app.log.error({ err: e }, 'shutdown failed'); process.exit(1); });
    };
    if (config.shutdownDrainMs === 0) { close(); return; }
    // Load balancers go on sending new requests until their probe of /readyz fails: serve them
    // meanwhile rather than refuse the connections.
    service.drain();
    app.log.info({ signal, drain_ms: config.shutdownDrainMs }, `shutting down: /readyz answers 503 for ${config.shutdownDrainMs} ms while requests are still served (GAVEL_SHUTDOWN_DRAIN_MS; a second signal ends it)`);
    const timer = setTimeout(close, config.shutdownDrainMs);
    endDrain = () => { clearTimeout(timer); close(); };
  };
  // SIGHUP (the terminal hung up) too: Gavel has no configuration to reload, and a hang-up must not
  // cut requests in flight as the signal's default action would.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => stop(signal));
  try {
    await announce(service, config, witness, embedded, () => stopping);
  } catch (e) {
    // The store closed under the banner's reads: the stop is under way and exits by itself.
    if (!stopping) throw e;
  }
}

/** The banner, once the start's check of the audit log is done; nothing once a stop has begun. */
async function announce(service: Awaited<ReturnType<typeof createService>>, config: Config, witness: LocalWitness | undefined, embedded: boolean, stopping: () => boolean): Promise<void> {
  const { app } = service;
  // What an auditor pins and a witness is configured with (docs/audit-log.md), said where the operator looks first.
  const log = await logIdentity(service.deps.store, service.deps.signer);
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const lines = [
    `Gavel is running (${config.databaseUrl ? 'PostgreSQL' : `SQLite at ${storeOptions(config).kind === 'sqlite' ? (storeOptions(config) as { file: string }).file : ''}`}).`,
    `  API:      ${base}/v1`,
    `  Console:  POST ${base}/v1/console/login exchanges a password for a session (docs/getting-started.md)`,
    `  OpenAPI:  ${base}/openapi.json`,
    `  Project:  ${service.bootstrap.projectId}`,
    `  Audit log: ${log.origin}, key ${log.vkey}`,
    `  Witness:  ${config.witnessUrl ?? 'none (checkpoints are signed, not witnessed)'}${witness ? ` (local, key ${witness.publicKeyVkey})` : ''}`,
    `  Merchants: ${service.deps.merchants.size > 0 ? `${service.deps.merchants.size} from ${config.merchantsFile}` : 'none (set GAVEL_MERCHANTS_FILE to allow executions)'}`,
  ];
  // The start's check of the log against its checkpoints and the witness (services/auditlog/continuity.ts).
  await service.auditLog.firstTick;
  const rollback = await openRollback(service.deps.store.db).catch(() => null);
  if (rollback) {
    lines.push('', `Warning: the audit log was rolled back (found ${rollback.at}): ${rollback.reason ?? ''}.`,
      '  Its witness will not cosign it again, and proofs of new events are not ready until it is put right:',
      '  restore the newest copy of the database (docs/audit-log.md).',
      '  An older copy has also forgotten what was written since it was taken: budgets and use counts spent (revoke',
      '  and issue again the permits that have them), executions (a nonce used since would call its merchant again),',
      '  revocations, freezes, role changes, policy activations and consumed approvals (README, "Backups and restores").');
  }
  if (service.bootstrap.admin) {
    lines.push('', `First start: the password of "${service.bootstrap.admin.name}" is printed above, this once.`);
  } else if (embedded) {
    lines.push('', 'The administrator password was printed on first start only.');
  }
  // Session cookies go without Secure unless GAVEL_PUBLIC_URL is https: fine on loopback, not beyond it.
  if (!isLoopbackHost(config.host) && !servedOverTls(config)) {
    lines.push('', `Warning: listening on ${config.host} without TLS. Console passwords and session cookies cross the network in clear;`,
      '  serve it behind TLS and set GAVEL_PUBLIC_URL=https://… (docs/identity.md). Without GAVEL_PUBLIC_URL the console',
      '  accepts sign-ins only at an address (not a domain name), to refuse DNS rebinding.');
  }
  // "Gavel is running" would be untrue once it is stopping.
  if (stopping()) return;
  process.stdout.write(lines.join('\n') + '\n');
}

async function migrate(): Promise<void> {
  // Warned about before anything is migrated: a misspelt GAVEL_DATABASE_URL leaves the SQLite default to be migrated.
  const config = readConfiguration();
  // As serve does: a database this creates is its owner's alone.
  process.umask(0o077);
  refuseUnusableDatabase(storeOptions(config), config.dataDir, 'write', 'gavel migrate');
  const store = openStore(storeOptions(config));
  try {
    const applied = await migrateToLatest(store);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'the database is up to date\n');
  } finally {
    await store.close();
  }
}

const tooOld = nodeTooOld();
if (tooOld !== undefined) fail(tooOld);

const [command] = process.argv.slice(2);
try {
  switch (command) {
    // Configuration comes from GAVEL_* and GAVEL_CONFIG alone: an argument (`--port 7448`, `--help`)
    // would otherwise be dropped and the server start on the defaults, perhaps on another database.
    case 'up': case 'serve':
      if (asksHelp(process.argv.slice(3))) { process.stdout.write(COMMAND_USAGE[command] + '\n'); break; }
      if (process.argv[3] !== undefined) fail(`gavel ${command} takes no arguments (got "${process.argv.slice(3).join(' ')}"): configure it with GAVEL_* variables or a GAVEL_CONFIG file\n\n${USAGE}`);
      await serve(command === 'up');
      break;
    case 'migrate':
      if (asksHelp(process.argv.slice(3))) { process.stdout.write(COMMAND_USAGE.migrate + '\n'); break; }
      // Migrations only go up, all of them: any other argument is a mistake, not an option.
      if (process.argv[3] !== undefined) fail(`gavel migrate takes no arguments (got "${process.argv[3]}"): it applies every migration not yet applied`);
      await migrate();
      break;
    case 'backup':
      if (asksHelp(process.argv.slice(3))) { process.stdout.write(BACKUP_USAGE + '\n'); break; }
      process.stdout.write(runBackup(process.argv.slice(3)) + '\n');
      break;
    case 'reset-password':
      if (asksHelp(process.argv.slice(3))) { process.stdout.write(RESET_PASSWORD_USAGE + '\n'); break; }
      await runResetPassword(process.argv.slice(3));
      break;
    case 'witness':
      if (asksHelp(process.argv.slice(3))) { process.stdout.write(WITNESS_USAGE + '\n'); break; }
      // As serve does: its database and key are its owner's alone, however it is started.
      process.umask(0o077);
      await runWitnessCommand(process.argv.slice(3));
      break;
    case 'audit': {
      const [sub, ...rest] = process.argv.slice(3);
      const help = (args: readonly string[]) => args.some((a) => HELP.includes(a));
      // Asked for, the usage is the answer; for want of a subcommand, a usage error.
      if (sub === undefined) fail(`gavel audit needs a command (verify or consistency)\n\n${AUDIT_VERIFY_USAGE}\n\n${AUDIT_CONSISTENCY_USAGE}`);
      if (HELP.includes(sub)) { process.stdout.write(`${AUDIT_VERIFY_USAGE}\n\n${AUDIT_CONSISTENCY_USAGE}\n`); break; }
      if (sub === 'consistency') {
        if (help(rest)) process.stdout.write(AUDIT_CONSISTENCY_USAGE + '\n');
        else process.exitCode = await runAuditConsistency(rest);
        break;
      }
      if (sub !== 'verify') fail(`unknown audit command "${sub}" (try: gavel audit verify, gavel audit consistency)`);
      if (help(rest)) process.stdout.write(AUDIT_VERIFY_USAGE + '\n');
      else process.exitCode = await runAuditVerify(rest);
      break;
    }
    // npm start and the other scripts name their command: a bare `gavel` is a usage error.
    case undefined: fail(`no command given\n\n${USAGE}`);
    case 'help': case '--help': case '-h': process.stdout.write(USAGE + '\n'); break;
    case '--version': case '-v': case 'version': process.stdout.write(`gavel ${version()}\n`); break;
    default: fail(`unknown command "${command}"\n\n${USAGE}`);
  }
} catch (e) {
  if (e instanceof ConfigError || e instanceof DataDirInUse || e instanceof SigningKeyMismatch || e instanceof WitnessUsageError || e instanceof WitnessKeyDamaged || e instanceof WitnessDatabaseRefused || e instanceof SigningKeyDamaged || e instanceof MigrationError || e instanceof LocalWitnessFailed || e instanceof BackupRefused || e instanceof ResetRefused || e instanceof DatabaseMissing || e instanceof DatabaseInaccessible || e instanceof LogStateMissing) fail(e.message);
  const problem = startupProblem(e);
  if (problem) fail(problem);
  throw e;
}
