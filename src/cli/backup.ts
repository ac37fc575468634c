// `gavel backup <file> [--force]`: a consistent copy of the SQLite database, taken while `gavel serve`
// runs. A `cp` of a live database in WAL mode may catch the file between a commit and its
// checkpoint. VACUUM INTO on a read-only connection reads one snapshot (WAL readers never block the
// writer) and touches neither the database nor the serving lock beside it. It keeps every INTEGER
// PRIMARY KEY (audit_events.seq, the sequencer's order); nothing reads another table's implicit
// rowid, which VACUUM may renumber. README, "Backups and restores".
import { existsSync, linkSync, renameSync, rmSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import { readConfiguration } from '../config/config.ts';
import { refuseUnusableDatabase, storeOptions } from '../service.ts';
import { NO_LINKS, removeStalePartials } from '../lib/key-file.ts';
import { flush } from '../lib/durable-fs.ts';

export const BACKUP_USAGE = 'usage: gavel backup <file> [--force]';

/** A refusal said in one line, exit 2. */
export class BackupRefused extends Error {}

/** Copies the configured SQLite database to the file named in `argv`; returns what to print. */
export function runBackup(argv: readonly string[]): string {
  let values: { force?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: [...argv], options: { force: { type: 'boolean' } }, allowPositionals: true, strict: true }));
  } catch (e) { throw new BackupRefused(`gavel backup: ${(e as Error).message} (${BACKUP_USAGE})`); }
  if (positionals.length === 0) throw new BackupRefused(`gavel backup takes the file to write (${BACKUP_USAGE})`);
  if (positionals.length > 1) throw new BackupRefused(`gavel backup takes one file, got ${positionals.length} (${BACKUP_USAGE})`);
  const config = readConfiguration();
  const where = storeOptions(config);
  if (where.kind !== 'sqlite') throw new BackupRefused('GAVEL_DATABASE_URL names a PostgreSQL database: back it up with pg_dump (README, "Backups and restores"); gavel backup copies the SQLite database');
  const database = where.file;
  // Else SQLite's open says only that it cannot open a file, taken for the copy's; and another
  // application's file is no Gavel backup, its read-only open below could leave files beside it (decision 0028).
  // Each passes over a missing file, said next.
  refuseUnusableDatabase(where, config.dataDir, 'read', 'gavel backup');
  if (!existsSync(database)) throw new BackupRefused(`no SQLite database at ${database}: nothing to back up (GAVEL_DATA_DIR)`);
  const target = resolve(positionals[0]!);
  // --force renames over the target: never over the live database or a file SQLite keeps beside it.
  const live = [database, `${database}-wal`, `${database}-shm`, `${database}-serving.lock`];
  if (live.some((f) => sameFile(f, target))) throw new BackupRefused(`${target} is the database itself or one of its files: name a file elsewhere`);
  // --force would rename the copy onto it, and fail.
  if (statSync(target, { throwIfNoEntry: false })?.isDirectory()) throw new BackupRefused(`${target} is a directory: name a file to write the copy to, such as ${join(target, 'gavel-backup.db')}`);
  if (existsSync(target) && !values.force) throw new BackupRefused(`${target} exists: name another file, or give --force to replace it`);
  // resolve() drops a trailing slash: `backups/` names a directory (as cp reads it), never a file to make.
  if (/\/\.?$/.test(positionals[0]!)) throw new BackupRefused(`cannot write ${positionals[0]}: it names a directory, which does not exist: name a file to write the copy to`);
  if (!existsSync(dirname(target))) throw new BackupRefused(`cannot write ${target}: its directory does not exist`);
  // The copy holds password, key and session hashes: its owner's alone, as the data directory is.
  process.umask(0o077);
  // A backup stopped mid-copy (a signal kills it inside the synchronous copy) left its partial copy,
  // as large as the database: those whose writer is gone are removed, as a key's loader does.
  removeStalePartials(target, 'a partial copy of the database left by a backup that was stopped');
  const partial = `${target}.${process.pid}.${randomBytes(6).toString('hex')}.partial`;
  try {
    const source = new BetterSqlite3(database, { readonly: true, fileMustExist: true, timeout: 10_000 });
    try {
      // Read first, so that a database it cannot read is not taken for a copy it cannot write. In
      // WAL mode SQLite reads only where it can make the -shm file, if it is not there yet.
      try { source.pragma('schema_version'); } catch (e) {
        if (/^SQLITE_(CANTOPEN|PERM|READONLY)/.test((e as { code?: string }).code ?? '')) throw new BackupRefused(`cannot read ${database} (${(e as Error).message}): GAVEL_DATA_DIR must be readable, and writable too while SQLite's -wal and -shm files are not beside the database`);
        throw e;
      }
      source.prepare('VACUUM INTO ?').run(partial);
    } catch (e) {
      if (e instanceof BackupRefused) throw e;
      // The database is open: what failed is writing the copy (a directory not writable, a full disk).
      if (/^SQLITE_(CANTOPEN|FULL|READONLY|PERM|IOERR_WRITE|IOERR_FSYNC)/.test((e as { code?: string }).code ?? '')) throw new BackupRefused(`cannot write ${target} (${(e as Error).message})`);
      throw e;
    } finally { source.close(); }
    const events = checkCopy(partial);
    flush(partial);
    if (values.force) renameSync(partial, target);
    else {
      // A link never replaces a file another process created meanwhile. Where the file system has
      // no hard links (a FAT or SMB backup volume), a rename checked just before it.
      try { linkSync(partial, target); } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? '';
        if (code === 'EEXIST' || (NO_LINKS.has(code) && existsSync(target))) throw new BackupRefused(`${target} exists: name another file, or give --force to replace it`);
        if (!NO_LINKS.has(code)) throw e;
        renameSync(partial, target);
      }
    }
    flush(dirname(target));
    const log = events === undefined ? 'no audit log yet: a database of an older version, which gavel migrate brings up to date' : `an audit log of ${events} events`;
    return `backed up ${database} to ${target} (${statSync(target).size} bytes, ${log}); keep it with ${join(config.dataDir, 'keys')} (README, "Backups and restores")`;
  } finally {
    rmSync(partial, { force: true });
    // SQLite's journal of the copy, left when writing it failed part way (a full disk, a size limit).
    rmSync(`${partial}-journal`, { force: true });
  }
}

/**
 * The copy opens and is intact; the size of its audit log, undefined when an older version made
 * the database without one (a backup taken before `gavel migrate` is run on an upgrade).
 */
function checkCopy(file: string): number | undefined {
  const copy = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    const check = copy.pragma('integrity_check', { simple: true });
    if (check !== 'ok') throw new Error(`the copy failed PRAGMA integrity_check (${String(check)}); the database may be damaged`);
    if (copy.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_log_state'").get() === undefined) return undefined;
    return (copy.prepare('SELECT size FROM audit_log_state WHERE id = 1').pluck().get() as number | undefined) ?? 0;
  } finally { copy.close(); }
}

function sameFile(a: string, b: string): boolean {
  if (resolve(a) === b) return true;
  try {
    const [x, y] = [statSync(a), statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch { return false; }
}
