// A benchmark's data directories are temporary: a run of bench:authorize leaves hundreds of MB of
// SQLite files (WAL included), and repeated runs filled /tmp. Each is removed when the process exits.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
process.on('exit', () => { for (const dir of made) rmSync(dir, { recursive: true, force: true }); });
// Interrupted (Ctrl-C, or a timeout's SIGTERM), a benchmark exits through the handler above too.
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) process.once(signal, () => process.exit(code));

/** A new directory under the system's temporary directory, removed when this process exits. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
