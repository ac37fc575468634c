// A member created by key (POST /v1/projects/{id}/principals) and a self-registration of the same
// name at once: the member route holds the project's roles lock, which a registration does not
// take, so its "is the name taken" read can miss a registration not yet committed, and its insert
// then meets the unique index. The loser is 409 name_taken, as a registration losing is, not a 500.
// PostgreSQL only: SQLite's one writer never interleaves the two.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { untilWaiting } from '../support/hold-table.ts';

const postgres = backends().find((b) => b.name === 'postgres');

describe('a member created while a registration of its name commits', { skip: !postgres && 'PostgreSQL not configured' }, () => {
  let svc: TestService;
  before(async () => { svc = await startService(postgres!); });
  after(async () => { await svc.stop(); });

  test('the member route answers 409 name_taken once the registration commits, not 500', async () => {
    const key = await svc.keyHeader(['ADMIN']);
    const name = 'raced-name';
    // The registration, inserted and not yet committed, from a session of its own.
    const schema = (svc.ts.options as { schema: string }).schema;
    const other = new pg.Client({ connectionString: process.env.GAVEL_TEST_DATABASE_URL, options: `-c search_path=${schema}` });
    await other.connect();
    try {
      await other.query('begin');
      await other.query(`insert into principals (id, kind, name, password_hash, created_at, disabled_at) values ('prn_01m8000000000000000000race', 'service', $1, null, $2, null)`, [name, new Date().toISOString()]);
      const created = svc.app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/principals`, headers: key, payload: { kind: 'service', name } });
      // Its read saw no such name; its insert waits on the uncommitted one's index entry. Its own
      // insert, seen afresh (untilWaiting): another file's, or the activity as first read in this
      // transaction, would let the registration commit before the read, and the race go untried.
      assert.ok(await untilWaiting(other, schema, 'insert into%principals%'), 'the member route\'s insert waits on the registration');
      await other.query('commit');
      const res = await created;
      assert.equal(res.statusCode, 409, res.body);
      assert.equal(res.json().code, 'name_taken');
      // Nothing of the loser was kept: one principal of that name, no membership for it.
      const rows = await svc.ts.store.db.selectFrom('principals').select('id').where('name', '=', name).execute();
      assert.deepEqual(rows.map((r) => r.id), ['prn_01m8000000000000000000race']);
    } finally {
      await other.end();
    }
  });
});
