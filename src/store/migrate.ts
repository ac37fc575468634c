// Versioned migrations for both engines: every file in ./migrations exporting `up(db, dialect)`,
// applied in name order. Capabilities own their own files, so adding one touches no registry.
import { readdir } from 'node:fs/promises';
import { sql } from 'kysely';
import { Migrator, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely/migration';
import type { Store } from './store.ts';
import { withoutReplyTimeout } from './postgres/dialect.ts';
import { databaseUnreachable } from './unreachable.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
/** A migration module: `.ts` in src, `.js` in the build (scripts/build.ts); its name has no extension. */
const MIGRATION_FILE = /^(\d{4}_[a-z0-9_]+)\.[jt]s$/;

class FolderProvider implements MigrationProvider {
  readonly #dialect: Store['dialect'];
  /**
   * The migration whose `up` failed in this run, and how. Kysely rolls the run back and releases
   * its lock after such a failure, and when either of those fails too (on a connection the server
   * ended, every statement after does) it reports that error instead, with no migration named.
   */
  failed: { name: string; error: unknown } | undefined;
  constructor(dialect: Store['dialect']) { this.#dialect = dialect; }
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => MIGRATION_FILE.test(f)).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const mod = await import(new URL(file, MIGRATIONS_DIR).href);
      const dialect = this.#dialect;
      const name = MIGRATION_FILE.exec(file)![1]!;
      migrations[name] = {
        up: async (db) => {
          try { await mod.up(db, dialect); } catch (error) { this.failed ??= { name, error }; throw error; }
        },
      };
    }
    return migrations;
  }
}

export class MigrationError extends Error {}

/**
 * A database holding tables but no record of Gavel's migrations: another application's, which a
 * start would otherwise fill with Gavel's tables beside its own. Refused before anything is
 * written (decision 0028). Gavel's own always has the record: the migrator commits
 * `kysely_migration` before it creates any other table.
 */
export class ForeignDatabase extends MigrationError {
  constructor(what: string, tables: string[], remedy: string) {
    const shown = tables.slice(0, 5).join(', ') + (tables.length > 5 ? ` and ${tables.length - 5} more` : '');
    super(`${what} holds tables of another application (${shown}) and no record of Gavel's migrations (no kysely_migration table); nothing was written to it. ${remedy}`);
  }
}

/** The tables that make a database another application's (see ForeignDatabase): none when it is Gavel's, or empty. */
export const foreignTables = (tables: string[]): string[] => tables.includes('kysely_migration') ? [] : tables;

/** A failed run, on either engine: all its migrations and their records are one transaction (SQLite's adapter: store/sqlite/dialect.ts). */
const NOTHING_APPLIED = 'nothing was applied: the pending migrations run in one transaction, which did not commit; `gavel migrate`, or a start, applies them once the cause is dealt with';

/** Lost outside a migration's own statements (reading what is applied, committing): the run may or may not have committed. */
const CONNECTION_LOST = 'the connection to the database was lost; `gavel migrate`, or a start, applies whatever is still pending once it is reachable';

const messageOf = (error: unknown): string => (error as Error)?.message ?? String(error);

/** Applies every pending migration; returns the names applied. Safe to run on every start. */
export async function migrateToLatest(store: Store): Promise<string[]> {
  // SQLite's file is checked before it is opened (service.ts, refuseForeignDatabase): opening it writes.
  if (store.dialect === 'postgres') await refuseForeignSchema(store);
  const { migrator, provider } = await migratorOf(store);
  // A migration may rewrite a large table, or wait for another instance's to finish.
  const { error, results }: MigrationResultSet = await withoutReplyTimeout(() => migrator.migrateToLatest());
  if (error) {
    const cause = provider.failed;
    const failed = cause?.name ?? results?.find((r) => r.status === 'Error')?.migrationName;
    // After a rollback to an older build, Kysely calls the newer build's migrations "corrupted":
    // say what happened and what to do instead. Nothing was applied (it checks before running any).
    const unknown = failed ? [] : await unknownMigrations(store, provider).catch(() => []);
    if (unknown.length) throw new MigrationError(`the database was migrated by a newer version of Gavel (migrations this version does not know: ${unknown.join(', ')}): run that version or a later one, or restore a backup taken before the upgrade (README, "Upgrades and rollbacks")`);
    if (!cause) throw new MigrationError(`${failed ? `migration ${failed}` : 'migrating'} failed: ${messageOf(error)}${databaseUnreachable(error) ? ` (${CONNECTION_LOST})` : ''}`);
    // The error the migration failed with is what went wrong. One raised after it (by the ROLLBACK
    // or the lock release) is its consequence when the connection was lost; otherwise it is a fault
    // of its own, said too. Either way the run's transaction never committed.
    const after = error !== cause.error && !databaseUnreachable(cause.error) ? `; rolling back then failed: ${messageOf(error)}` : '';
    throw new MigrationError(`migration ${cause.name} failed: ${messageOf(cause.error)} (${NOTHING_APPLIED})${after}`);
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

async function migratorOf(store: Store): Promise<{ migrator: Migrator; provider: FolderProvider }> {
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

/**
 * Refuses a PostgreSQL schema (the current one, where Gavel's tables go) holding another
 * application's tables. Tables an extension installed there (PostGIS's spatial_ref_sys, say) are
 * not counted: a database made for Gavel may have them.
 */
async function refuseForeignSchema(store: Store): Promise<void> {
  const { rows } = await sql<{ name: string; database: string; schema: string }>`
    select c.relname as name, current_database() as database, current_schema() as schema
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relkind in ('r', 'p', 'v', 'm', 'f')
      and not exists (select 1 from pg_catalog.pg_depend d
        where d.classid = 'pg_catalog.pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
    order by c.relname`.execute(store.db);
  const foreign = foreignTables(rows.map((r) => r.name));
  if (!foreign.length) return;
  throw new ForeignDatabase(`the PostgreSQL database "${rows[0]!.database}" (schema "${rows[0]!.schema}")`, foreign,
    'Point GAVEL_DATABASE_URL at a database of Gavel\'s own (an empty one is set up at the first start), or at a schema of its own: create schema gavel, and add ?options=-c%20search_path%3Dgavel to the URL.');
}
