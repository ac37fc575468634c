// An activation reads who may activate (the four-eyes rule of the project's SoD document, the
// caller's POLICY_AUTHOR) and then writes. An SoD document saved, or the role taken away, while it
// is between the two must leave it either committed before that change (the audit log says so) or
// refused as it would be after it. Each race stops the activation at its first write (the test
// holds policy_versions in EXCLUSIVE mode from a session of its own: reads go on, writes wait),
// sends the change through a second instance, then lets both go. Without a common lock the change
// commits and answers while the activation still waits, and the activation then commits an act
// the change had already forbidden.
// On SQLite one writer runs each transaction whole, so the two run one after the other, in both
// orders, under the same check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { backends } from '../support/backends.ts';
import { consoleMember } from '../support/console.ts';
import { raceSuites, type Answer, type App } from '../support/interleave.ts';
import { untilWaiting } from '../support/hold-table.ts';
import { startService, type TestService } from '../support/service.ts';

interface Race {
  title: string;
  /** The change: the audit event it writes, and how to send it; then the activation's answer when refused after it. */
  kind: string;
  refusal: { status: number; code: string };
  prepare(svc: TestService): Promise<{ activate(app: App): Promise<Answer>; change(app: App): Promise<Answer> }>;
}

async function authorWithVersion(svc: TestService) {
  const author = await svc.member(['POLICY_AUTHOR']);
  const headers = { authorization: `Bearer ${author.key}` };
  const saved = await svc.app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/policy`, headers, payload: { policy: { spec_version: '1', rules: [{ id: 'r', effect: 'ALLOW' }] }, note: 'raced' } });
  assert.equal(saved.statusCode, 201, saved.body);
  const version = saved.json().version as number;
  return { author, activate: (app: App) => app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/policy/activate`, headers, payload: { version } }) };
}

const RACES: Race[] = [
  {
    title: 'four-eyes turned on while the saver activates its own version',
    kind: 'sod.updated',
    refusal: { status: 403, code: 'four_eyes_required' },
    async prepare(svc) {
      const { activate } = await authorWithVersion(svc);
      const admin = await svc.keyHeader(['ADMIN']);
      const document = { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: true };
      return { activate, change: (app) => app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/sod`, headers: admin, payload: document }) };
    },
  },
  {
    title: 'POLICY_AUTHOR taken from the activating key\'s holder',
    kind: 'role.revoked',
    refusal: { status: 403, code: 'forbidden' },
    async prepare(svc) {
      const { author, activate } = await authorWithVersion(svc);
      const admin = await consoleMember(svc, ['ADMIN']);
      const url = `/v1/console/projects/${svc.projectId}/members/${author.principalId}/roles/POLICY_AUTHOR/revoke`;
      return { activate, change: (app) => app.inject({ method: 'POST', url, headers: admin.post, payload: {} }) };
    },
  },
];

async function check(svc: TestService, race: Race, activated: Answer, changed: Answer): Promise<void> {
  assert.equal(changed.statusCode, 200, changed.body);
  const events = (await svc.ts.store.db.selectFrom('audit_events').select(['kind', 'actor']).where('project_id', '=', svc.projectId).orderBy('seq').execute()).map((e) => e.kind);
  const change = events.indexOf(race.kind);
  const act = events.indexOf('policy.activated');
  assert.ok(change >= 0);
  if (activated.statusCode === 200) {
    assert.ok(act < change, `the activation committed after the change that forbids it (activated at ${act} of the audit log, ${race.kind} at ${change})`);
  } else {
    assert.deepEqual([activated.statusCode, activated.json().code], [race.refusal.status, race.refusal.code], activated.body);
    assert.equal(act, -1, 'a refused activation activated nothing');
    assert.ok(events.lastIndexOf('policy.activation_refused') > change, 'the refusal is audited after the change');
  }
  const active = await svc.ts.store.db.selectFrom('policy_active').select('version').where('project_id', '=', svc.projectId).executeTakeFirst();
  assert.equal(active !== undefined, activated.statusCode === 200, 'a version is active exactly when the activation said so');
}

raceSuites('an activation and a change of who may activate', RACES, async (svc, race, race2) => {
  const r = await race.prepare(svc);
  const [activated, changed] = await race2('policy_versions', 'update "policy_versions"%', r.activate, r.change);
  await check(svc, race, activated, changed);
});

// Authorized as it arrives, then stopped before the policy lock (the test holds it): the role taken,
// or the key revoked, meanwhile is seen under the roles lock, and the activation answers as a
// request sent after the change would (403 forbidden, audited; 401 for the revoked key).
for (const backend of backends().filter((b) => b.name === 'postgres')) {
  for (const loss of ['POLICY_AUTHOR taken', 'key revoked'] as const) {
    test(`an activation authorized before its holder's ${loss}, and stopped before its locks until then, activates nothing (${backend.name})`, async () => {
      const svc = await startService(backend);
      const client = new pg.Client({ connectionString: process.env.GAVEL_TEST_DATABASE_URL });
      await client.connect();
      try {
        const { author, activate } = await authorWithVersion(svc);
        const admin = await consoleMember(svc, ['ADMIN']);
        const P = `/v1/console/projects/${svc.projectId}`;
        await client.query('begin');
        await client.query('select pg_advisory_xact_lock(hashtext($1))', [`policy:${svc.projectId}`]);
        const activated = activate(svc.app);
        // This service's session waiting: any advisory lock not granted in the database may be another
        // file's (Kysely's migration lock, another project's policy lock), and the change would then
        // be sent before this activation was authorized, the race untried.
        const schema = (svc.ts.options as { schema: string }).schema;
        assert.ok(await untilWaiting(client, schema, '%pg_advisory_xact_lock%'), 'the activation waits for the policy lock');
        const url = loss === 'key revoked' ? `${P}/api-keys/${author.keyId}/revoke` : `${P}/members/${author.principalId}/roles/POLICY_AUTHOR/revoke`;
        const changed = await svc.app.inject({ method: 'POST', url, headers: admin.post, payload: {} });
        assert.equal(changed.statusCode, 200, changed.body);
        await client.query('commit');
        const answer = await activated;
        assert.deepEqual([answer.statusCode, answer.json().code], loss === 'key revoked' ? [401, 'unauthorized'] : [403, 'forbidden'], answer.body);
        const active = await svc.ts.store.db.selectFrom('policy_active').select('version').where('project_id', '=', svc.projectId).executeTakeFirst();
        assert.equal(active, undefined, 'nothing was activated');
      } finally {
        await client.end();
        await svc.stop();
      }
    });
  }
}
