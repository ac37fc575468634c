// gavel migrate's contract on both engines: a fresh database gets every migration in name order and
// a current one none, and a migration that fails stops the start with its name, never a store half
// migrated that serves anyway.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { sql } from 'kysely';
import pg from 'pg';
import { backends, type TestStore } from '../support/backends.ts';
import { ForeignDatabase, migrateToLatest, MigrationError } from '../../src/store/migrate.ts';

const MIGRATIONS = readdirSync(new URL('../../src/store/migrations/', import.meta.url)).filter((f) => /^\d{4}_[a-z0-9_]+\.ts$/.test(f)).map((f) => f.slice(0, -3)).sort();

for (const backend of backends()) {
  describe(`migrations on ${backend.name}`, () => {
    test('a fresh database gets every migration, in name order; a current one gets none', async () => {
      const ts = await backend.open({ migrate: false });
      try {
        assert.deepEqual(await migrateToLatest(ts.store), MIGRATIONS);
        assert.deepEqual(await migrateToLatest(ts.store), []);
      } finally { await ts.cleanup(); }
    });

    test('a migration numbered before the last one applied (a capability that landed later) is applied, not refused', async () => {
      const ts = await backend.open();
      try {
        // 0301_decisions does nothing: unrecording it stands for a file merged after later ones ran.
        await sql`delete from kysely_migration where name = '0301_decisions'`.execute(ts.store.db);
        assert.deepEqual(await migrateToLatest(ts.store), ['0301_decisions']);
      } finally { await ts.cleanup(); }
    });

    test('a database a newer version migrated is refused with a MigrationError naming the migrations this version lacks, and nothing is applied', async () => {
      const ts = await backend.open();
      try {
        // A newer build's migration, recorded as it would record it; and one of ours pending beside it.
        await sql`insert into kysely_migration (name, timestamp) values ('9998_from_a_newer_version', ${new Date().toISOString()})`.execute(ts.store.db);
        await sql`delete from kysely_migration where name = '0301_decisions'`.execute(ts.store.db);
        await assert.rejects(migrateToLatest(ts.store), (e: unknown) => e instanceof MigrationError
          && e.message === 'the database was migrated by a newer version of Gavel (migrations this version does not know: 9998_from_a_newer_version): run that version or a later one, or restore a backup taken before the upgrade (README, "Upgrades and rollbacks")');
        const applied = await sql<{ name: string }>`select name from kysely_migration where name = '0301_decisions'`.execute(ts.store.db);
        assert.equal(applied.rows.length, 0);
      } finally { await ts.cleanup(); }
    });

    test('a database whose migration record names none of Gavel\'s (another application using Kysely\'s migrator) is refused as another application\'s, not a newer Gavel\'s', async () => {
      const ts = await backend.open({ migrate: false });
      try {
        await sql`create table kysely_migration (name varchar(255) not null primary key, timestamp varchar(255) not null)`.execute(ts.store.db);
        await sql`insert into kysely_migration (name, timestamp) values ('2024_01_create_customers', ${new Date().toISOString()})`.execute(ts.store.db);
        await assert.rejects(migrateToLatest(ts.store), (e: unknown) => e instanceof ForeignDatabase
          && / records the migrations of another application in its kysely_migration table \(2024_01_create_customers\), none of them Gavel's; nothing was written to it\. Point GAVEL_/.test(e.message));
        const applied = await sql<{ name: string }>`select name from kysely_migration`.execute(ts.store.db);
        assert.deepEqual(applied.rows.map((r) => r.name), ['2024_01_create_customers']);
      } finally { await ts.cleanup(); }
    });

    test('a migration that fails is a MigrationError naming it, and nothing of the run is recorded as applied', async () => {
      const ts = await backend.open({ migrate: false });
      try {
        // The second migration creates this table: its name taken beforehand, it fails. The run is one
        // transaction, so the first, applied before it, is rolled back with it. (On PostgreSQL by a
        // sequence: a table would make the schema another application's, refused before any migration.)
        assert.equal(MIGRATIONS[1], '0100_identity');
        await (backend.name === 'postgres' ? sql`create sequence sessions` : sql`create table sessions (id text)`).execute(ts.store.db);
        await assert.rejects(migrateToLatest(ts.store), (e: unknown) => e instanceof MigrationError && e.message.startsWith('migration 0100_identity failed:'));
        const applied = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(ts.store.db);
        assert.deepEqual(applied.rows.map((r) => r.name), []);
      } finally { await ts.cleanup(); }
    });
  });
}

const postgres = backends().find((b) => b.name === 'postgres');

/**
 * Runs `migrateToLatest` on a migrated test schema while another session holds `table` (after
 * `prepare`), and has the server terminate the run's session once it waits on that lock: a
 * connection lost at a known point. `then` gets what the run threw, the table released.
 */
async function migrateTerminatedWaitingOn(table: string, prepare: (ts: TestStore) => Promise<void>, then: (error: unknown, ts: TestStore) => Promise<void>): Promise<void> {
  const ts = await postgres!.open();
  const { url, schema } = ts.options as { url: string; schema: string };
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await prepare(ts);
    await holder.query(`begin; lock table ${schema}.${table} in access exclusive mode`);
    const migrating = migrateToLatest(ts.store).then(() => null, (e: unknown) => e);
    let terminated = 0;
    while (!terminated) {
      // Waiting on the held table ('relation'), not on the migration's advisory lock, which
      // another test's migration can hold for a moment in a busy suite. The activity read afresh:
      // this transaction would otherwise go on seeing the sessions as they were at its first read,
      // and a connection the run opened since never.
      await holder.query('select pg_stat_clear_snapshot()');
      const { rows } = await holder.query(`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
        where application_name = $1 and wait_event_type = 'Lock' and wait_event = 'relation'`, [`gavel/${schema}`]);
      terminated = rows[0].n;
    }
    const error = await migrating;
    await holder.query('rollback');
    await then(error, ts);
  } finally {
    await holder.end();
    await ts.cleanup();
  }
}

test('PostgreSQL: the connection terminated in the middle of a migration is reported as that, naming the migration, not as the ROLLBACK or lock release that failed after it', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  // The last migration, unrecorded and undone, indexes this table: it waits on it mid-run.
  await migrateTerminatedWaitingOn('audit_checkpoints', async (ts) => {
    await sql`drop index audit_checkpoints_witnessed`.execute(ts.store.db);
    await sql`delete from kysely_migration where name = '0912_witnessed_checkpoints'`.execute(ts.store.db);
  }, async (error, ts) => {
    assert.ok(error instanceof MigrationError, String(error));
    assert.match(error.message, /^migration 0912_witnessed_checkpoints failed: terminating connection due to administrator command \(nothing was applied: /);
    const applied = await sql<{ name: string }>`select name from kysely_migration where name = '0912_witnessed_checkpoints'`.execute(ts.store.db);
    assert.equal(applied.rows.length, 0);
    // The next run applies it.
    assert.deepEqual(await migrateToLatest(ts.store), ['0912_witnessed_checkpoints']);
  });
});

test('PostgreSQL: the connection terminated while the run reads what is applied is a lost connection, not the lock release Kysely then fails', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  // The run reads kysely_migration inside its transaction, under the migration lock.
  await migrateTerminatedWaitingOn('kysely_migration', async () => {}, async (error, ts) => {
    assert.ok(error instanceof MigrationError, String(error));
    assert.match(error.message, /^migrating failed: .* \(the connection to the database was lost; /);
    assert.doesNotMatch(error.message, /discarded/);
    assert.deepEqual(await migrateToLatest(ts.store), []);
  });
});
