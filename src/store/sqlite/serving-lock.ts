// One serving process per SQLite database. A second `gavel serve` on the same data directory would
// take the first one's calls in flight for a dead process's and mark them UNKNOWN (recovery runs
// before it listens), and two writer threads would contend for one file. The lock is an exclusive
// SQLite lock on a file beside the database: the OS drops it when the process ends, however it
// ends (kill -9 included), so a restart after a crash is never refused.
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { makeDirectory } from '../../lib/durable-fs.ts';

export class DataDirInUse extends Error {}

/** Takes the serving lock of `databaseFile`, or throws DataDirInUse. Release it on close. */
export function takeServingLock(databaseFile: string): { release(): void } {
  // Taken before the store is opened, so on a first start the directory is made here (durably:
  // SQLite flushes the directory it creates the database in, never that directory's parent).
  makeDirectory(dirname(databaseFile));
  const db = new BetterSqlite3(`${databaseFile}-serving.lock`, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('begin exclusive');
  } catch (e) {
    db.close();
    if ((e as { code?: string }).code === 'SQLITE_BUSY') {
      throw new DataDirInUse(`another Gavel process is serving ${databaseFile}: stop it first (two on one SQLite database would each take the other's calls in flight for a dead process's)`);
    }
    throw e;
  }
  return { release: () => { if (db.open) db.close(); } };
}
