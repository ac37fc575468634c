// `gavel reset-password <name>`: a new random password for a person, printed once (docs/identity.md,
// "Recovering a password"). It reads the configuration as `gavel serve` does and may run while a
// server serves the same database: it writes one transaction through SQLite's own locking, as the
// server's other connections do, and takes no serving lock (store/sqlite/serving-lock.ts).
import { existsSync, writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { readConfiguration } from '../config/config.ts';
import { refuseUnusableDatabase, storeOptions } from '../service.ts';
import { pendingMigrations } from '../store/migrate.ts';
import { openStore } from '../store/store.ts';
import { resetPassword, ResetRefused } from '../services/identity/password-reset.ts';
import { installationProject } from '../services/bootstrap.ts';

export const RESET_PASSWORD_USAGE = 'usage: gavel reset-password <person name>';

export { ResetRefused };

/** Resets the password of the person named in `argv` and prints it, this once, on stdout. */
export async function runResetPassword(argv: readonly string[]): Promise<void> {
  let positionals: string[];
  try {
    ({ positionals } = parseArgs({ args: [...argv], options: {}, allowPositionals: true, strict: true }));
  } catch (e) { throw new ResetRefused(`gavel reset-password: ${(e as Error).message} (${RESET_PASSWORD_USAGE})`); }
  if (positionals.length !== 1) throw new ResetRefused(`gavel reset-password takes one name, got ${positionals.length} (${RESET_PASSWORD_USAGE})`);
  const config = readConfiguration();
  const where = storeOptions(config);
  // Before the store opens it, which writes (decision 0028); PostgreSQL's is told by pendingMigrations.
  refuseUnusableDatabase(where, config.dataDir, 'write', 'gavel reset-password');
  // Opening a file that is not there would make an empty database.
  if (where.kind === 'sqlite' && !existsSync(where.file)) throw new ResetRefused(`no SQLite database at ${where.file}: nothing to reset (GAVEL_DATA_DIR)`);
  // The WAL and shm files this may create hold what the database holds: its owner's alone.
  process.umask(0o077);
  const store = openStore(where);
  try {
    const pending = await pendingMigrations(store);
    if (pending.length > 0) throw new ResetRefused(`the database lacks this version's migrations (${pending.join(', ')}): run gavel migrate, or start the server, first`);
    // A first start stopped (killed, a power loss) after printing the administrator's password and
    // before committing the account left no one to reset: the next start creates and prints one.
    if (await installationProject(store.db) === undefined) throw new ResetRefused('this installation has not finished its first start, so it has no administrator yet: start it (gavel serve, or npm start), which creates "admin" and prints its password');
    const reset = await resetPassword(store, positionals[0]!, new Date());
    // Synchronously, once committed: the old password no longer signs in.
    writeSync(1, `New password for "${reset.name}", printed this once and stored only as a hash; ${reset.sessionsEnded} console session(s) ended:\n  ${reset.password}\n`);
  } finally {
    await store.close();
  }
}
