// Versioned migrations for both engines: every file in ./migrations exporting `up(db, dialect)`,
// applied in name order. Capabilities own their own files, so adding one touches no registry.
import { readdir } from 'node:fs/promises';
import { sql } from 'kysely';
import { Migrator, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely/migration';
import type { Store } from './store.ts';
import { withoutReplyTimeout } from './postgres/dialect.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
/** A migration module: `.ts` in src, `.js` in the build (scripts/build.ts); its name has no extension. */
const MIGRATION_FILE = /^(\d{4}_[a-z0-9_]+)\.[jt]s$/;

class FolderProvider implements MigrationProvider {
  readonly #dialect: Store['dialect'];
  constructor(dialect: Store['dialect']) { this.#dialect = dialect; }
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => MIGRATION_FILE.test(f)).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const mod = await import(new URL(file, MIGRATIONS_DIR).href);
      const dialect = this.#dialect;
      migrations[MIGRATION_FILE.exec(file)![1]!] = { up: (db) => mod.up(db, dialect) };
    }
    return migrations;
  }
}

export class MigrationError extends Error {}

/** Applies every pending migration; returns the names applied. Safe to run on every start. */
export async function migrateToLatest(store: Store): Promise<string[]> {
  const { migrator, provider } = await migratorOf(store);
  // A migration may rewrite a large table, or wait for another instance's to finish.
  const { error, results }: MigrationResultSet = await withoutReplyTimeout(() => migrator.migrateToLatest());
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    // After a rollback to an older build, Kysely calls the newer build's migrations "corrupted":
    // say what happened and what to do instead. Nothing was applied (it checks before running any).
    const unknown = failed ? [] : await unknownMigrations(store, provider).catch(() => []);
    if (unknown.length) throw new MigrationError(`the database was migrated by a newer version of Gavel (migrations this version does not know: ${unknown.join(', ')}): run that version or a later one, or restore a backup taken before the upgrade (README, "Upgrades and rollbacks")`);
    throw new MigrationError(`${failed ? `migration ${failed.migrationName}` : 'migrating'} failed: ${(error as Error).message ?? error}`);
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

async function migratorOf(store: Store): Promise<{ migrator: Migrator; provider: MigrationProvider }> {
  // Kysely looks for its migration tables in every schema unless told which one: with several
  // schemas in one database (tests, tenants) it would find another schema's table and skip
  // creating its own. Name the current schema explicitly. (Its introspection is kept to that schema
  // too: store/postgres/dialect.ts.)
  const schema = store.dialect === 'postgres'
    ? (await sql<{ s: string }>`select current_schema() as s`.execute(store.db)).rows[0]?.s
    : undefined;
  const provider = new FolderProvider(store.dialect);
  const migrator = new Migrator({
    db: store.db,
    ...(schema ? { migrationTableSchema: schema } : {}),
    provider,
    // Capabilities are developed in parallel; a later-numbered file may land first.
    allowUnorderedMigrations: true,
  });
  return { migrator, provider };
}

/** This build's migrations the database has not applied (all of them on an empty one); reads only. */
export async function pendingMigrations(store: Store): Promise<string[]> {
  const { migrator } = await migratorOf(store);
  return (await migrator.getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/** Migrations the database records as applied that this build has no file for (a newer build's). */
async function unknownMigrations(store: Store, provider: MigrationProvider): Promise<string[]> {
  const known = await provider.getMigrations();
  // The migration table lives in the current schema (migrationTableSchema above).
  const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(store.db);
  return rows.map((r) => r.name).filter((name) => !(name in known));
}
