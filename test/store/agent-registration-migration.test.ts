// Migration 0901 gives agents registration columns of their own: agents registered before it take
// the time and actor of their first `agent.registered` event; agents only seen through a permit, a
// freeze or a decision stay unregistered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { up } from '../../src/store/migrations/0901_agent_registration.ts';

for (const backend of backends()) {
  test(`migration 0901 takes earlier registrations from their audit events (${backend.name})`, async () => {
    const ts = await backend.open();
    try {
      const { db, dialect } = ts.store;
      // The table as it was before the migration.
      await sql`alter table agents drop column registered_at`.execute(db);
      await sql`alter table agents drop column registered_by`.execute(db);
      for (const [did, by] of [['did:example:registered', 'prn_a'], ['did:example:seen', 'key_b'], ['did:example:elsewhere', 'prn_c']]) {
        await sql`insert into agents (project_id, did, name, created_at, created_by) values ('prj_x', ${did}, null, '2026-01-01T00:00:00.000Z', ${by})`.execute(db);
      }
      const event = async (id: string, project: string, kind: string, actor: string, at: string, data: string) =>
        sql`insert into audit_events (id, project_id, kind, actor, created_at, data) values (${id}, ${project}, ${kind}, ${actor}, ${at}, ${data})`.execute(db);
      await event('aud_1', 'prj_x', 'agent.registered', 'prn_a', '2026-01-02T00:00:00.000Z', '{"agent":"did:example:registered","name":"bot"}');
      await event('aud_2', 'prj_x', 'agent.registered', 'prn_z', '2026-01-03T00:00:00.000Z', '{"agent":"did:example:registered","name":"bot"}');
      await event('aud_3', 'prj_x', 'agent.frozen', 'key_b', '2026-01-02T00:00:00.000Z', '{"agent":"did:example:seen","reason":null}');
      await event('aud_4', 'prj_other', 'agent.registered', 'prn_c', '2026-01-02T00:00:00.000Z', '{"agent":"did:example:elsewhere","name":null}');

      await up(db, dialect);

      const rows = await sql<{ did: string; registered_at: string | null; registered_by: string | null }>`select did, registered_at, registered_by from agents where project_id = 'prj_x' order by did`.execute(db);
      assert.deepEqual(rows.rows, [
        { did: 'did:example:elsewhere', registered_at: null, registered_by: null },
        { did: 'did:example:registered', registered_at: '2026-01-02T00:00:00.000Z', registered_by: 'prn_a' },
        { did: 'did:example:seen', registered_at: null, registered_by: null },
      ]);
    } finally { await ts.cleanup(); }
  });
}
