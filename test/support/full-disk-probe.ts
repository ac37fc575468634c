// Preloaded into a writer thread (`--import`, ServiceOptions.writerExecArgv) by the full-disk
// tests: on the broadcast channel below, 'full' caps every SQLite connection the thread opened at
// its current size (PRAGMA max_page_count, so growing it fails with SQLITE_FULL, as on a full disk)
// and 'space' lifts the cap; each is acknowledged once applied.
import Database from 'better-sqlite3';
import { FULL_DISK_CHANNEL, type FullDiskMessage } from './full-disk.ts';

const opened = new Set<Database.Database>();
const pragma = Database.prototype.pragma;
// Every connection is configured through pragma() as it opens (store/sqlite/dialect.ts).
Database.prototype.pragma = function (this: Database.Database, ...args: Parameters<typeof pragma>) {
  opened.add(this);
  return pragma.apply(this, args);
};
const channel = new BroadcastChannel(FULL_DISK_CHANNEL);
channel.unref();
channel.onmessage = ({ data }: { data: FullDiskMessage }) => {
  if (data !== 'full' && data !== 'space') return;
  for (const db of opened) if (db.open) pragma.call(db, `max_page_count = ${data === 'full' ? pragma.call(db, 'page_count', { simple: true }) : 4294967294}`);
  channel.postMessage((data === 'full' ? 'full-applied' : 'space-applied') satisfies FullDiskMessage);
};
