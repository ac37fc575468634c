// Versioned migrations for both engines: every file in ./migrations exporting `up(db, dialect)`,
// applied in name order. Capabilities own their own files, so adding one touches no registry.
import { readdirSync } from 'node:fs';
import { sql } from 'kysely';
import { Migrator, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely/migration';
import type { Store } from './store.ts';
import { withoutReplyTimeout } from './postgres/dialect.ts';
import { databaseUnreachable } from './unreachable.ts';
import { writeLockHeld } from './sqlite/dialect.ts';
import { someOf } from './sqlite/read-untouched.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
/** A migration module: `.ts` in src, `.js` in the build (scripts/build.ts); its name has no extension. */
const MIGRATION_FILE = /^(\d{4}_[a-z0-9_]+)\.[jt]s$/;

/** This build's migration files, in name order, with the names Kysely records them under. */
function migrationFiles(): { file: string; name: string }[] {
  return readdirSync(MIGRATIONS_DIR).filter((f) => MIGRATION_FILE.test(f)).sort().map((file) => ({ file, name: MIGRATION_FILE.exec(file)![1]! }));
}

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
    const migrations: Record<string, Migration> = {};
    for (const { file, name } of migrationFiles()) {
      const mod = await import(new URL(file, MIGRATIONS_DIR).href);
      const dialect = this.#dialect;
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
 * A database of another application, which a start would otherwise fill with Gavel's tables beside
 * its own: one holding tables but no record of Gavel's migrations, or whose record
 * (`kysely_migration`, another application's when it too uses Kysely's migrator) names none of
 * Gavel's. Refused before anything is written (decision 0028). Gavel's own always has the record,
 * with its own migrations in it: the migrator commits `kysely_migration` before it creates any other
 * table, and every run records what it applied in the same transaction.
 */
export class ForeignDatabase extends MigrationError {
  constructor(what: string, evidence: string, remedy: string) {
    super(`${what} ${evidence}; nothing was written to it. ${remedy}`);
  }
}

/** What to do instead, on each engine. */
export const FOREIGN_DATABASE_REMEDY = {
  sqlite: 'Point GAVEL_DATA_DIR at a directory of Gavel\'s own (its database, gavel.db, is made at the first start), or move this file aside.',
  postgres: 'Point GAVEL_DATABASE_URL at a database of Gavel\'s own (an empty one is set up at the first start), or at a schema of its own: create schema gavel, and add ?options=-c%20search_path%3Dgavel to the URL.',
} as const;

/**
 * What makes a database another application's (see ForeignDatabase), or undefined when it is Gavel's
 * or empty. `tables`: its tables and views; `recorded`: the names in its `kysely_migration`, when it has
 * one and they were read (else the record is taken for Gavel's, and migrateToLatest tells).
 */
export function foreignEvidence(tables: string[], recorded: string[] | undefined): string | undefined {
  if (!tables.includes('kysely_migration')) {
    return tables.length ? `holds tables of another application (${someOf(tables)}) and no record of Gavel's migrations (no kysely_migration table)` : undefined;
  }
  return recorded ? foreignRecord(recorded) : undefined;
}

/**
 * A migration record that names migrations but none of Gavel's: another application's, and not a
 * newer Gavel's (whose record holds this build's older migrations too). Undefined otherwise.
 */
function foreignRecord(recorded: string[]): string | undefined {
  const ours = new Set(migrationFiles().map((m) => m.name));
  if (!recorded.length || recorded.some((name) => ours.has(name))) return undefined;
  return `records the migrations of another application in its kysely_migration table (${someOf(recorded)}), none of them Gavel's`;
}

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
    const recorded = failed ? [] : await recordedMigrations(store).catch(() => []);
    const ours = new Set(migrationFiles().map((m) => m.name));
    const unknown = recorded.filter((name) => !ours.has(name));
    // Kysely refuses a record of migrations it has no file for before it runs any: when none of them
    // is Gavel's, the database is another application's (SQLite's is caught before the store opens
    // it, service.ts, refuseForeignDatabase, but for a store given ready-made).
    const foreign = foreignRecord(recorded);
    if (foreign) throw new ForeignDatabase(await databaseNamed(store), foreign, FOREIGN_DATABASE_REMEDY[store.dialect]);
    if (unknown.length) throw newerVersion(unknown);
    if (store.dialect === 'sqlite' && [error, cause?.error].some((e) => (e as { code?: string } | undefined)?.code === 'SQLITE_BUSY')) {
      throw new MigrationError(`${writeLockHeld(store.file ?? 'the SQLite database')} (nothing was applied)`);
    }
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

/** A database a newer Gavel migrated, which this version must not write: its schema may mean otherwise. */
const newerVersion = (unknown: string[]): MigrationError =>
  new MigrationError(`the database was migrated by a newer version of Gavel (migrations this version does not know: ${unknown.join(', ')}): run that version or a later one, or restore a backup taken before the upgrade (README, "Upgrades and rollbacks")`);

/**
 * This build's migrations the database has not applied (all of them on an empty one); reads only.
 * A database this version must not write is refused as migrateToLatest refuses it, not told to be
 * migrated: another application's (ForeignDatabase), or one a newer version migrated.
 */
export async function pendingMigrations(store: Store): Promise<string[]> {
  if (store.dialect === 'postgres') await refuseForeignSchema(store);
  const { migrator } = await migratorOf(store);
  const migrations = await migrator.getMigrations();
  const pending = migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
  // With none of Gavel's applied there may be no record to read.
  const recorded = await recordedMigrations(store).catch((e: unknown) => { if (pending.length === migrations.length) return []; throw e; });
  const foreign = foreignRecord(recorded);
  if (foreign) throw new ForeignDatabase(await databaseNamed(store), foreign, FOREIGN_DATABASE_REMEDY[store.dialect]);
  const ours = new Set(migrations.map((m) => m.name));
  const unknown = recorded.filter((name) => !ours.has(name));
  if (unknown.length) throw newerVersion(unknown);
  return pending;
}

/** The migrations the database records as applied (in the current schema: migrationTableSchema above), in name order. */
async function recordedMigrations(store: Store): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(store.db);
  return rows.map((r) => r.name);
}

/** The database as an operator names it: SQLite's file, PostgreSQL's database and schema. */
async function databaseNamed(store: Store): Promise<string> {
  if (store.dialect === 'sqlite') return store.file ?? 'the SQLite database';
  const { rows } = await sql<{ database: string; schema: string }>`select current_database() as database, current_schema() as schema`.execute(store.db);
  return `the PostgreSQL database "${rows[0]!.database}" (schema "${rows[0]!.schema}")`;
}

/**
 * Refuses a search_path that names no schema that exists (current_schema() is null): the migrator's
 * first create then failed with PostgreSQL's "no schema has been selected to create in", and
 * reset-password said to run gavel migrate. Read only; nothing is created.
 */
async function refuseMissingSchema(store: Store): Promise<void> {
  const { rows } = await sql<{ schema: string | null; path: string; database: string }>`
    select current_schema() as schema, current_setting('search_path') as path, current_database() as database`.execute(store.db);
  const { schema, path, database } = rows[0]!;
  if (schema !== null) return;
  // "$user" stands for the role's name, which a create schema written with it would not mean.
  const named = path.split(',').map((s) => s.trim()).find((s) => s !== '' && s !== '"$user"' && s !== '$user') ?? 'gavel';
  throw new MigrationError(`the PostgreSQL database "${database}" has no schema on its search_path (${path}), where Gavel's tables go; nothing was written to it. Create the schema (create schema ${named}) or name one that exists in GAVEL_DATABASE_URL's options=-c search_path=….`);
}

/**
 * Refuses a PostgreSQL schema (the current one, where Gavel's tables go) holding another
 * application's tables. Tables an extension installed there (PostGIS's spatial_ref_sys, say) are
 * not counted: a database made for Gavel may have them.
 */
async function refuseForeignSchema(store: Store): Promise<void> {
  await refuseMissingSchema(store);
  const { rows } = await sql<{ name: string; database: string; schema: string }>`
    select c.relname as name, current_database() as database, current_schema() as schema
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relkind in ('r', 'p', 'v', 'm', 'f')
      and not exists (select 1 from pg_catalog.pg_depend d
        where d.classid = 'pg_catalog.pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
    order by c.relname`.execute(store.db);
  // A record of another application's migrations is told once Kysely has refused it, having
  // written nothing (migrateToLatest): read here, it would be one more read to fail on its own.
  const foreign = foreignEvidence(rows.map((r) => r.name), undefined);
  if (foreign) throw new ForeignDatabase(`the PostgreSQL database "${rows[0]!.database}" (schema "${rows[0]!.schema}")`, foreign, FOREIGN_DATABASE_REMEDY.postgres);
}
