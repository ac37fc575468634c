// The witness's own durable state, in its own SQLite file (never Gavel's main store):
// the latest cosigned checkpoint per origin, and every checkpoint it cosigned, by root.
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { WitnessedState } from '../domain/auditlog/witness.ts';
import { makeDirectory } from '../lib/durable-fs.ts';
import { readUntouched, someOf, tablesOf } from '../store/sqlite/read-untouched.ts';

export const WITNESS_DB_FILE = 'witness.sqlite';

/** A witness.sqlite that is some other database, or none: said in one line, exit 2, nothing written. */
export class WitnessDatabaseRefused extends Error {}

/** What to do about a foreign witness.sqlite, said to `gavel witness`; gavel up says its own (cli/local-witness.ts). */
export const FOREIGN_WITNESS_REMEDY = `Point --data-dir at a directory of the witness's own (its ${WITNESS_DB_FILE} is made at the first start), or move this file aside`;

/** The tables WitnessStore makes. */
const WITNESS_TABLES = new Set(['latest', 'cosigned']);

/**
 * Refuses a witness.sqlite holding tables a witness never makes (a Gavel service's database copied
 * or renamed there, another application's), as the service refuses a foreign database (decision
 * 0028): opened as the witness opens it, it would be switched to WAL and given the witness's tables
 * beside its own. Read through a connection that writes nothing, before the witness's key is made.
 * A file that is no SQLite database (or a damaged one) is refused too, naming it: the open would
 * say only "the SQLite database in --data-dir", which gavel up says as GAVEL_DATA_DIR's, the service's.
 */
export function refuseForeignWitnessDatabase(dataDir: string): void {
  const file = join(dataDir, WITNESS_DB_FILE);
  if (!existsSync(file)) return;
  let others: string[];
  try { others = readUntouched(file, tablesOf).filter((t) => !WITNESS_TABLES.has(t)); } catch (e) {
    const { code, message } = e as { code?: string; message: string };
    if (code !== 'SQLITE_NOTADB' && code !== 'SQLITE_CORRUPT') return;
    throw new WitnessDatabaseRefused(`${file} is not a SQLite database, or is damaged (${message}): the witness keeps in it the checkpoints it cosigned; put back a copy of it, or move it aside for a witness that remembers none`);
  }
  if (!others.length) return;
  const whose = others.includes('kysely_migration') ? "a Gavel service's database, not its witness's" : "another application's";
  throw new WitnessDatabaseRefused(`${file} is not a witness database: it holds tables a witness never makes (${someOf(others)}), ${whose}; nothing was written to it. ${FOREIGN_WITNESS_REMEDY}`);
}

export interface CosignedRecord {
  readonly origin: string;
  readonly size: number;
  readonly root: Uint8Array;
  /** The checkpoint note as submitted, followed by this witness's cosignature line. */
  readonly note: string;
  readonly cosignedAt: number;
}

export class WitnessStore {
  readonly db: Database.Database;
  readonly #latest: Database.Statement<[string], { size: number; root: Buffer }>;
  readonly #setLatest: Database.Statement<[string, number, Uint8Array, number]>;
  readonly #addCosigned: Database.Statement<[string, Uint8Array, number, string, number]>;
  readonly #byRoot: Database.Statement<[string, Uint8Array], { size: number; note: string; cosigned_at: number }>;

  constructor(dataDir: string) {
    makeDirectory(dataDir, 0o700);
    this.db = openWhileBusy(join(dataDir, WITNESS_DB_FILE));
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS latest (
        origin TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        root BLOB NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE IF NOT EXISTS cosigned (
        origin TEXT NOT NULL,
        root BLOB NOT NULL,
        size INTEGER NOT NULL,
        note TEXT NOT NULL,
        cosigned_at INTEGER NOT NULL,
        PRIMARY KEY (origin, root)
      ) STRICT;
    `);
    this.#latest = this.db.prepare('SELECT size, root FROM latest WHERE origin = ?');
    this.#setLatest = this.db.prepare(
      `INSERT INTO latest (origin, size, root, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (origin) DO UPDATE SET size = excluded.size, root = excluded.root, updated_at = excluded.updated_at`,
    );
    this.#addCosigned = this.db.prepare(
      `INSERT INTO cosigned (origin, root, size, note, cosigned_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (origin, root) DO NOTHING`,
    );
    this.#byRoot = this.db.prepare('SELECT size, note, cosigned_at FROM cosigned WHERE origin = ? AND root = ?');
  }

  latest(origin: string): WitnessedState | null {
    const row = this.#latest.get(origin);
    return row ? { size: row.size, root: new Uint8Array(row.root) } : null;
  }

  setLatest(origin: string, size: number, root: Uint8Array, at: number): void {
    this.#setLatest.run(origin, size, root, at);
  }

  recordCosigned(r: CosignedRecord): void {
    this.#addCosigned.run(r.origin, r.root, r.size, r.note, r.cosignedAt);
  }

  cosignedByRoot(origin: string, root: Uint8Array): CosignedRecord | null {
    const row = this.#byRoot.get(origin, root);
    return row ? { origin, root, size: row.size, note: row.note, cosignedAt: row.cosigned_at } : null;
  }

  /** Runs fn in a BEGIN IMMEDIATE transaction: the read-decide-write is one atomic step. */
  atomically<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  close(): void {
    this.db.close();
  }
}

/**
 * Opens the witness database, in WAL mode with FULL sync. Two witnesses started together on a new
 * directory race to switch it to WAL, and SQLite refuses the loser with SQLITE_BUSY at once, busy
 * handler or not (seen in CI: "database is locked" at startup). So the loser closes, waits a few
 * milliseconds and tries again, for up to 10 s; startup is the only place this blocks.
 */
function openWhileBusy(file: string): Database.Database {
  const deadline = performance.now() + 10_000; // not the wall clock, which may step meanwhile
  for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
    const db = new Database(file, { timeout: 5000 });
    try {
      db.pragma('journal_mode = WAL');
      // A cosignature is a promise about the future: it must survive power loss once returned.
      db.pragma('synchronous = FULL');
      return db;
    } catch (error) {
      db.close();
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || performance.now() > deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, wait);
    }
  }
}
