// Names made durable: a file's data fsync does not make its directory entry durable, nor does a new
// directory's own fsync make its entry in its parent so. For key files, databases' directories, backups.
import { closeSync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** fsyncs a file, or a directory: a file's name is durable only once its directory is flushed. */
export function flush(path: string): void {
  const fd = openSync(path, 'r');
  try { fsyncSync(fd); } finally { closeSync(fd); }
}

/**
 * `mkdir -p dir`, durably: each directory it makes is flushed, and so is the parent of the first,
 * which holds its entry. Else a power loss could lose a new directory (`keys/`, a first start's
 * data directory) whose files were flushed, while a database elsewhere keeps what they held.
 * Nothing is flushed when the directory was there already.
 */
export function makeDirectory(dir: string, mode?: number): void {
  const first = mkdirSync(dir, { recursive: true, ...(mode === undefined ? {} : { mode }) });
  if (first === undefined) return;
  const top = resolve(first);
  for (let made = resolve(dir); made.length > top.length; made = dirname(made)) flush(made);
  flush(top);
  flush(dirname(top));
}
