// Creating a private key file durably and whole, for the witness's key and the local signer's.
import { closeSync, fsyncSync, linkSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { flush } from './durable-fs.ts';
import { randomBytes } from 'node:crypto';

/** What link(2) answers where the file system has no hard links. */
export const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * Creates `path` (mode 0600) holding `pem`, durably: a key written beside a database that survives
 * a power loss must survive it too. Written whole under a name of its own, then linked into place:
 * a link never overwrites (EEXIST: another starting process won; read its key), and a process
 * starting beside this one, or this one after a crash, never reads the file half written.
 */
export function createKeyFile(path: string, pem: string): void {
  const partial = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.partial`;
  try {
    writeWhole(partial, pem);
    linkSync(partial, path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    // The winner's key is read and used next: its name must be durable even if the winner dies
    // before it flushes the directory.
    if (code === 'EEXIST') flush(dirname(path));
    // A file system without hard links (SMB and other network shares, FAT): the file is created
    // in place, exclusively, as before links were used; only the half-written read can recur there.
    if (!NO_LINKS.has(code)) throw e;
    writeWhole(path, pem);
  } finally {
    rmSync(partial, { force: true });
  }
  flush(dirname(path));
}

/** No write of a partial file takes this long: younger ones are left alone whoever wrote them. */
const PARTIAL_QUIET_MS = 60_000;

/**
 * Removes the partial files `createKeyFile` left beside `path` when its process died between
 * writing one and removing it (each a copy of a private key; `gavel backup`'s, of the database). Only those whose writer cannot be
 * writing them now: its process is gone, or it is this process's pid and the file predates this
 * process (a restarted container's pid 1). And only those quiet for a minute: a writer in another
 * PID namespace sharing the directory (two containers on one volume) looks gone from here.
 */
export function removeStalePartials(path: string, what = 'a leftover copy of a private key'): void {
  const prefix = `${basename(path)}.`;
  const now = Date.now();
  for (const name of readdirSync(dirname(path))) {
    if (!name.startsWith(prefix)) continue;
    // `-journal`: the rollback journal SQLite keeps beside a copy `gavel backup` was killed writing.
    const m = /^(\d+)\.[0-9a-f]+\.partial(-journal)?$/.exec(name.slice(prefix.length));
    if (!m) continue;
    const file = join(dirname(path), name);
    let mtime: number;
    try { mtime = statSync(file).mtimeMs; } catch { continue; } // removed meanwhile by another
    if (now - mtime < PARTIAL_QUIET_MS || !writerGone(Number(m[1]), mtime)) continue;
    try { rmSync(file, { force: true }); } catch (e) {
      process.emitWarning(`${file} is ${what} and could not be removed (${(e as Error).message}); remove it`, { code: 'GAVEL_KEY_FILE_PARTIAL' });
    }
  }
}

/** Whether the process `pid` cannot be writing a file last written at `mtime`. */
function writerGone(pid: number, mtime: number): boolean {
  if (pid === process.pid) return mtime < performance.timeOrigin;
  try { process.kill(pid, 0); } catch (e) { return (e as NodeJS.ErrnoException).code === 'ESRCH'; }
  return false;
}

/** Creates `path` ('wx': never over another's file) holding `text`, flushed. */
function writeWhole(path: string, text: string): void {
  const fd = openSync(path, 'wx', 0o600);
  try { writeSync(fd, text); fsyncSync(fd); } finally { closeSync(fd); }
}

/** Reported already, by path: a key is loaded once per process, but a test may load it again. */
const exposedReported = new Set<string>();

/**
 * Warns, once per file, when an existing private key file is readable or writable by anyone but its
 * owner (a key copied in with `cp`, a restore that kept the umask's 0644). The key is used all the
 * same, as before: refusing it would stop a running deployment over a fix the operator can make.
 */
export function warnIfExposed(path: string): void {
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) === 0 || exposedReported.has(path)) return;
  exposedReported.add(path);
  process.emitWarning(`${path} holds a private key and has mode ${mode.toString(8).padStart(4, '0')}: other users of this machine can read it; run chmod 600 on it`, { code: 'GAVEL_KEY_FILE_MODE' });
}
