import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { newId } from '../../src/lib/ids.ts';
import { recordAudit } from '../../src/services/audit/record.ts';
import { bootstrap } from '../../src/services/bootstrap.ts';

for (const backend of backends()) {
  describe(`store on ${backend.name}`, () => {
    test('migrations apply once and are idempotent', async () => {
      const ts = await backend.open({ migrate: false });
      try {
        const first = await migrateToLatest(ts.store);
        assert.ok(first.includes('0001_core'), `applied ${first.join(',')}`);
        assert.deepEqual(await migrateToLatest(ts.store), []);
        // A second connection (another process) sees the same schema and applies nothing.
        assert.deepEqual(await migrateToLatest(ts.reopen()), []);
      } finally { await ts.cleanup(); }
    });

    test('a failed transaction leaves nothing behind', async () => {
      const ts = await backend.open();
      try {
        const id = newId('prj');
        await assert.rejects(ts.store.transaction(async (trx) => {
          await trx.insertInto('projects').values({ id, name: 'x', created_at: new Date().toISOString() }).execute();
          await recordAudit(trx, { projectId: id, kind: 'test', actor: 'system', data: { a: 1 } });
          throw new Error('boom');
        }), /boom/);
        assert.equal(await ts.store.db.selectFrom('projects').select('id').where('id', '=', id).executeTakeFirst(), undefined);
        assert.equal((await ts.store.db.selectFrom('audit_events').select('id').where('project_id', '=', id).execute()).length, 0);
      } finally { await ts.cleanup(); }
    });

    test('concurrent read-modify-write transactions never lose an update', async () => {
      const ts = await backend.open();
      // A second PostgreSQL pool stands for a second instance. better-sqlite3 is synchronous, so two
      // SQLite connections in one thread would block each other; one process keeps one connection.
      const other = backend.name === 'postgres' ? ts.reopen() : ts.store;
      try {
        await ts.store.db.insertInto('settings').values({ key: 'counter', value: '0' }).execute();
        // Each transaction locks the row (SQLite: BEGIN IMMEDIATE; PostgreSQL: FOR UPDATE).
        const bump = (s: typeof ts.store) => s.transaction(async (trx) => {
          let q = trx.selectFrom('settings').select('value').where('key', '=', 'counter');
          if (s.dialect === 'postgres') q = q.forUpdate();
          const row = await q.executeTakeFirstOrThrow();
          await trx.updateTable('settings').set({ value: String(Number(row.value) + 1) }).where('key', '=', 'counter').execute();
        });
        await Promise.all(Array.from({ length: 40 }, (_, i) => bump(i % 2 ? ts.store : other)));
        const row = await ts.store.db.selectFrom('settings').select('value').where('key', '=', 'counter').executeTakeFirstOrThrow();
        assert.equal(row.value, '40');
      } finally { await ts.cleanup(); }
    });

    test('bigint columns round-trip up to 2^53-1 as numbers', async () => {
      const ts = await backend.open();
      try {
        const id = newId('aud');
        await ts.store.db.insertInto('audit_events').values({ id, project_id: 'p', kind: 'k', actor: 'a', created_at: 'now', data: '{}', leaf_index: Number.MAX_SAFE_INTEGER }).execute();
        const row = await ts.store.db.selectFrom('audit_events').select('leaf_index').where('id', '=', id).executeTakeFirstOrThrow();
        assert.equal(row.leaf_index, Number.MAX_SAFE_INTEGER);
      } finally { await ts.cleanup(); }
    });

    test('bootstrap announces the administrator\'s password before its account commits, so no kill after the commit loses it', async () => {
      const ts = await backend.open();
      try {
        let announced: { name: string; password: string } | undefined;
        const result = await bootstrap(ts.store, new Date(), (admin) => { announced = admin; });
        assert.ok(result.admin);
        assert.deepEqual(announced, result.admin, 'the password announced is the account\'s');
        // The announcement runs inside the transaction: one that fails (a closed stdout) leaves no
        // account whose password nobody saw, and the next start creates and announces one.
        const fresh = await backend.open();
        try {
          await assert.rejects(bootstrap(fresh.store, new Date(), () => { throw new Error('EPIPE'); }), /EPIPE/);
          assert.equal((await fresh.store.db.selectFrom('principals').selectAll().execute()).length, 0);
          assert.equal((await fresh.store.db.selectFrom('settings').selectAll().where('key', '=', 'bootstrap_project').execute()).length, 0);
          let again: unknown;
          assert.ok((await bootstrap(fresh.store, new Date(), (admin) => { again = admin; })).admin);
          assert.ok(again, 'the next start announces its own');
        } finally { await fresh.cleanup(); }
      } finally { await ts.cleanup(); }
    });

    test('bootstrap creates one project and one admin, once, even when raced', async () => {
      const ts = await backend.open();
      const other = backend.name === 'postgres' ? ts.reopen() : ts.store;
      try {
        const [a, b] = await Promise.all([bootstrap(ts.store), bootstrap(other)]);
        assert.equal(a.projectId, b.projectId);
        assert.equal([a.admin, b.admin].filter(Boolean).length, 1, 'exactly one start prints a password');
        const again = await bootstrap(ts.store);
        assert.equal(again.admin, undefined);
        assert.equal((await ts.store.db.selectFrom('projects').selectAll().execute()).length, 1);
        const admin = await ts.store.db.selectFrom('principals').selectAll().executeTakeFirstOrThrow();
        assert.match(admin.password_hash ?? '', /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
        assert.ok(!admin.password_hash?.includes((a.admin ?? b.admin)!.password), 'password never stored in the clear');
        const events = await ts.store.db.selectFrom('audit_events').select('kind').execute();
        assert.deepEqual(events.map((e) => e.kind), ['project.bootstrapped']);
      } finally { await ts.cleanup(); }
    });
  });
}
