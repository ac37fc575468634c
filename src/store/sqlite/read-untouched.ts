// Reading a SQLite file that may not be ours (decision 0028) without changing it or leaving files beside it.
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';

/**
 * Runs `read` on `file` through a connection that writes nothing. A file in WAL mode with no -wal or
 * -shm beside it (its application closed it cleanly): a read-only connection would make both and
 * leave them, since only a writer removes them at its close. A query_only one makes them too, but as
 * the last to close, removes them, writing nothing. Throws what SQLite throws for a file it cannot read.
 */
export function readUntouched<T>(file: string, read: (db: BetterSqlite3.Database) => T): T {
  const closedWal = walMode(file) && !existsSync(`${file}-wal`) && !existsSync(`${file}-shm`);
  const db = new BetterSqlite3(file, { readonly: !closedWal, fileMustExist: true });
  try {
    if (closedWal) db.pragma('query_only = true');
    return read(db);
  } finally { db.close(); }
}

/** Its tables and views, SQLite's own left out. */
export function tablesOf(db: BetterSqlite3.Database): string[] {
  return db.prepare("select name from sqlite_master where type in ('table', 'view') and name not like 'sqlite\\_%' escape '\\' order by name").pluck().all() as string[];
}

/** A few names of a list, for a one-line message. */
export const someOf = (names: string[]): string => names.slice(0, 5).join(', ') + (names.length > 5 ? ` and ${names.length - 5} more` : '');

/** The SQLite header's read and write versions (bytes 18 and 19) are 2 in WAL mode. */
function walMode(file: string): boolean {
  const header = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try { return readSync(fd, header, 0, 20, 0) === 20 && header[18] === 2 && header[19] === 2; } finally { closeSync(fd); }
}
