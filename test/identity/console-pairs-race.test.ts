// Pairs of console (and control-plane) writes that must not both win, or must not lose one: two
// activations, removals, revocations, registrations, freezes, retirements, logouts, approvals and
// resolutions of the same thing, and grant against revoke. Each race stops its first request at a
// write (the test holds the table in EXCLUSIVE mode from a session of its own: reads go on, writes
// wait), sends the second through a second instance on the same PostgreSQL database, then lets both
// go (support/interleave.ts); on SQLite the two run one after the other, in both orders. Each check
// is that the answers, the final state and the audit log tell the same story: one winner, the
// loser told so (or a no-op said to be one), and one audit event per change.
import assert from 'node:assert/strict';
import { newAgent, issue } from '../support/authorize.ts';
import { consoleMember } from '../support/console.ts';
import { ed25519Pair, newApprover, seedObligation } from '../support/approvals.ts';
import { seedInFlight } from '../support/executions.ts';
import { pairRaceSuites, post, type App, type PairRace as Race } from '../support/interleave.ts';
import type { TestService } from '../support/service.ts';

async function events(svc: TestService, kinds: string[]) {
  const rows = await svc.ts.store.db.selectFrom('audit_events').select(['kind', 'actor', 'data']).where('project_id', '=', svc.projectId).orderBy('seq').execute();
  return rows.filter((e) => kinds.includes(e.kind)).map((e) => ({ kind: e.kind, actor: e.actor, data: JSON.parse(e.data) }));
}

async function twoVersions(svc: TestService) {
  const a = await svc.member(['POLICY_AUTHOR']);
  const b = await svc.member(['POLICY_AUTHOR']);
  const versions: number[] = [];
  for (const [who, effect] of [[a, 'ALLOW'], [b, 'DENY']] as const) {
    const saved = await svc.app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/policy`, headers: { authorization: `Bearer ${who.key}` }, payload: { policy: { spec_version: '1', rules: [{ id: 'r', effect }] }, note: 'raced' } });
    assert.equal(saved.statusCode, 201, saved.body);
    versions.push(saved.json().version);
  }
  const activate = (who: typeof a, version: number) => (app: App) => app.inject({ method: 'POST', url: `/v1/projects/${svc.projectId}/policy/activate`, headers: { authorization: `Bearer ${who.key}` }, payload: { version } });
  return { a, b, versions: versions as [number, number], activate };
}

const RACES: Race[] = [
  {
    title: 'two activations of different versions: the later in the audit log is active, each answer names the one it replaced',
    table: 'policy_versions', write: 'update "policy_versions"%',
    async prepare(svc) {
      const { a, b, versions: [v1, v2], activate } = await twoVersions(svc);
      return {
        first: activate(b, v1), second: activate(a, v2),
        async check(first, second) {
          assert.equal(first.statusCode, 200, first.body);
          assert.equal(second.statusCode, 200, second.body);
          const acts = await events(svc, ['policy.activated']);
          assert.equal(acts.length, 2);
          const active = await svc.ts.store.db.selectFrom('policy_active').select('version').where('project_id', '=', svc.projectId).executeTakeFirstOrThrow();
          assert.equal(Number(active.version), acts[1]!.data.version);
          assert.equal(acts[1]!.data.previous_version, acts[0]!.data.version);
          const byVersion = new Map([[first.json().version, first.json()], [second.json().version, second.json()]]);
          assert.equal(byVersion.get(acts[0]!.data.version).previous_version, null);
          assert.equal(byVersion.get(acts[1]!.data.version).previous_version, acts[0]!.data.version);
          const states = await svc.ts.store.db.selectFrom('policy_versions').select(['version', 'state']).where('project_id', '=', svc.projectId).execute();
          assert.deepEqual(states.filter((s) => s.state === 'active').map((s) => Number(s.version)), [acts[1]!.data.version]);
          assert.deepEqual(states.filter((s) => s.state === 'retired').map((s) => Number(s.version)), [acts[0]!.data.version]);
        },
      };
    },
  },
  {
    title: 'one version activated twice at once: one 200, one 409 already_active, one event',
    table: 'policy_versions', write: 'update "policy_versions"%',
    async prepare(svc) {
      const { a, b, versions: [v1], activate } = await twoVersions(svc);
      return {
        first: activate(b, v1), second: activate(a, v1),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 409], `${first.body} ${second.body}`);
          assert.equal((await events(svc, ['policy.activated'])).length, 1);
          const refused = await events(svc, ['policy.activation_refused']);
          assert.equal(refused.length, 1);
          assert.equal(refused[0]!.data.reason, 'already_active');
        },
      };
    },
  },
  {
    title: 'two ADMINs removing the same member: one 200, the other 422 not_a_member, one event',
    table: 'memberships', write: 'update "memberships"%',
    async prepare(svc, P) {
      const [x, y] = [await consoleMember(svc, ['ADMIN']), await consoleMember(svc, ['ADMIN'])];
      const target = await consoleMember(svc, ['AUDITOR']);
      const remove = (by: typeof x) => (app: App) => post(app, `${P}/members/${target.principalId}/revoke`, {}, by.post);
      return {
        first: remove(x), second: remove(y),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 422], `${first.body} ${second.body}`);
          assert.equal((await events(svc, ['member.revoked'])).length, 1);
        },
      };
    },
  },
  {
    title: 'two last person ADMINs removing each other: one remains',
    table: 'memberships', write: 'update "memberships"%',
    async prepare(svc, P) {
      const [x, y] = [await consoleMember(svc, ['ADMIN']), await consoleMember(svc, ['ADMIN'])];
      const boot = (await svc.ts.store.db.selectFrom('principals').select('id').where('name', '=', 'admin').executeTakeFirstOrThrow()).id;
      assert.equal((await post(svc.app, `${P}/members/${boot}/revoke`, {}, x.post)).statusCode, 200);
      return {
        first: (app) => post(app, `${P}/members/${y.principalId}/revoke`, {}, x.post),
        second: (app) => post(app, `${P}/members/${x.principalId}/revoke`, {}, y.post),
        async check(first, second) {
          const s = [first.statusCode, second.statusCode].sort();
          assert.equal(s[0], 200, `${first.body} ${second.body}`);
          assert.ok([401, 403, 409].includes(s[1]!), `${first.body} ${second.body}`);
          const admins = await svc.ts.store.db.selectFrom('role_grants').select('principal_id').where('project_id', '=', svc.projectId).where('role', '=', 'ADMIN').execute();
          assert.equal(admins.length, 1);
          assert.equal((await events(svc, ['member.revoked'])).length, 2); // the boot admin's and one
        },
      };
    },
  },
  {
    title: 'a role granted and revoked at once: held exactly when the last event grants it',
    table: 'role_grants', write: '% "role_grants"%',
    async prepare(svc, P) {
      const [x, y] = [await consoleMember(svc, ['ADMIN']), await consoleMember(svc, ['ADMIN'])];
      const target = await svc.member(['AUDITOR']);
      return {
        first: (app) => post(app, `${P}/members/${target.principalId}/roles`, { role: 'APPROVER' }, x.post),
        second: (app) => post(app, `${P}/members/${target.principalId}/roles/APPROVER/revoke`, {}, y.post),
        async check(first, second) {
          assert.equal(first.statusCode, 200, first.body);
          assert.equal(second.statusCode, 200, second.body);
          const evs = (await events(svc, ['role.granted', 'role.revoked'])).filter((e) => e.data.principal_id === target.principalId && e.data.role === 'APPROVER');
          const held = (await svc.ts.store.db.selectFrom('role_grants').select('role').where('principal_id', '=', target.principalId).where('role', '=', 'APPROVER').execute()).length === 1;
          assert.equal(held, evs.at(-1)?.kind === 'role.granted', JSON.stringify(evs));
          assert.equal(first.json().changed, true);
          assert.equal(second.json().changed, evs.some((e) => e.kind === 'role.revoked'));
          assert.equal(second.json().member.roles.includes('APPROVER'), false);
        },
      };
    },
  },
  {
    title: 'one API key revoked twice at once: one event, one changed',
    table: 'api_keys', write: 'update "api_keys"%',
    async prepare(svc, P) {
      const [x, y] = [await consoleMember(svc, ['ADMIN']), await consoleMember(svc, ['ADMIN'])];
      const target = await svc.member(['AUDITOR']);
      const revoke = (by: typeof x) => (app: App) => post(app, `${P}/api-keys/${target.keyId}/revoke`, {}, by.post);
      return {
        first: revoke(x), second: revoke(y),
        async check(first, second) {
          assert.equal(first.statusCode, 200, first.body);
          assert.equal(second.statusCode, 200, second.body);
          assert.deepEqual([first.json().changed, second.json().changed].sort(), [false, true]);
          const evs = await events(svc, ['api_key.revoked']);
          assert.equal(evs.length, 1);
          const winner = first.json().changed ? first : second;
          assert.equal(winner.json().api_key.revoked_by, evs[0]!.actor);
          assert.equal(first.json().api_key.revoked_at, second.json().api_key.revoked_at);
        },
      };
    },
  },
  {
    title: 'one permit revoked twice at once: one 200, one 409 already_revoked, one event',
    table: 'permits', write: 'update "permits"%',
    async prepare(svc, P) {
      const [x, y] = [await consoleMember(svc, ['PERMIT_ISSUER']), await consoleMember(svc, ['ADMIN'])];
      const { commitment } = await issue(svc, newAgent().did, { actions: ['pay'], resources: ['resource://shop/*'] });
      const revoke = (by: typeof x) => (app: App) => post(app, `${P}/permits/${commitment}/revoke`, {}, by.post);
      return {
        first: revoke(x), second: revoke(y),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 409], `${first.body} ${second.body}`);
          const loser = first.statusCode === 409 ? first : second;
          assert.equal(loser.json().code, 'already_revoked');
          assert.equal((await events(svc, ['permit.revoked'])).length, 1);
          const winner = first.statusCode === 200 ? first : second;
          assert.match(loser.json().detail, new RegExp(winner.json().revoked_at.replace(/[.]/g, '\\.')));
        },
      };
    },
  },
  ...([false, true]).map((seen): Race => ({
    title: `one DID${seen ? ' (seen before, unregistered)' : ''} registered twice at once: one 201, one 409 agent_exists, one event`,
    table: 'agents', write: 'insert into "agents"%',
    async prepare(svc, P) {
      const [x, y] = [await consoleMember(svc, ['PERMIT_ISSUER']), await consoleMember(svc, ['ADMIN'])];
      const did = newAgent().did;
      // A freeze gives the agent a row without a registration, as a permit or a decision would.
      if (seen) assert.equal((await post(svc.app, `${P}/agents/freeze`, { agent: did }, y.post)).statusCode, 200);
      const register = (by: typeof x, name: string) => (app: App) => post(app, `${P}/agents`, { did, name }, by.post);
      return {
        first: register(x, 'one'), second: register(y, 'two'),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode].sort(), [201, 409], `${first.body} ${second.body}`);
          assert.equal((first.statusCode === 409 ? first : second).json().code, 'agent_exists');
          const evs = await events(svc, ['agent.registered']);
          assert.equal(evs.length, 1);
          const winner = first.statusCode === 201 ? first : second;
          const row = await svc.ts.store.db.selectFrom('agents').selectAll().where('did', '=', did).executeTakeFirstOrThrow();
          assert.equal(row.name, winner.json().name);
          assert.equal(row.registered_by, evs[0]!.actor);
          assert.equal(row.frozen_at !== null, seen, 'a registration leaves the state as it was');
        },
      };
    },
  })),
  {
    title: 'one agent frozen on both planes at once: one 200, one 409, one event',
    table: 'agents', write: 'lock table agents%',
    async prepare(svc, P) {
      const x = await consoleMember(svc, ['ADMIN']);
      const key = { ...(await svc.keyHeader([])), 'content-type': 'application/json' };
      const did = newAgent().did;
      return {
        first: (app) => post(app, `${P}/agents/freeze`, { agent: did, reason: 'console' }, x.post),
        second: (app) => post(app, `/v1/projects/${svc.projectId}/agents/freeze`, { agent: did, reason: 'machine' }, key),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 409], `${first.body} ${second.body}`);
          const evs = await events(svc, ['agent.frozen']);
          assert.equal(evs.length, 1);
          const winner = first.statusCode === 200 ? first : second;
          const loser = first.statusCode === 409 ? first : second;
          assert.equal(loser.json().code, 'agent_already_frozen');
          assert.deepEqual(loser.json().state, winner.json());
        },
      };
    },
  },
  {
    title: 'a frozen agent released in the console while frozen again by key: state as the last event says',
    table: 'agents', write: 'lock table agents%',
    async prepare(svc, P) {
      const x = await consoleMember(svc, ['ADMIN']);
      const key = { ...(await svc.keyHeader(['PERMIT_ISSUER'])), 'content-type': 'application/json' };
      const did = newAgent().did;
      assert.equal((await post(svc.app, `${P}/agents/freeze`, { agent: did }, x.post)).statusCode, 200);
      return {
        first: (app) => post(app, `${P}/agents/release`, { agent: did }, x.post),
        second: (app) => post(app, `/v1/projects/${svc.projectId}/agents/freeze`, { agent: did }, key),
        async check(first, second) {
          assert.equal(first.statusCode, 200, first.body);
          assert.ok([200, 409].includes(second.statusCode), second.body);
          const evs = await events(svc, ['agent.frozen', 'agent.released']);
          assert.equal(evs.length, second.statusCode === 200 ? 3 : 2);
          const row = await svc.ts.store.db.selectFrom('agents').selectAll().where('did', '=', did).executeTakeFirstOrThrow();
          assert.equal(row.frozen_at !== null, evs.at(-1)!.kind === 'agent.frozen');
        },
      };
    },
  },
  {
    title: 'one session logged out twice at once: one session.ended',
    table: 'sessions', write: 'update "sessions"%',
    async prepare(svc) {
      const x = await consoleMember(svc, ['AUDITOR']);
      const logout = (app: App) => post(app, '/v1/console/logout', {}, x.post);
      return {
        first: logout, second: logout,
        async check(first, second) {
          assert.ok([200, 401].includes(first.statusCode) && [200, 401].includes(second.statusCode) && first.statusCode + second.statusCode <= 601, `${first.body} ${second.body}`);
          const evs = (await events(svc, ['session.ended'])).filter((e) => e.actor === x.principalId);
          assert.equal(evs.length, 1, JSON.stringify(evs));
        },
      };
    },
  },
  {
    title: 'a member removed while it logs out: the session ended once, by whichever came first',
    table: 'sessions', write: 'update "sessions"%',
    async prepare(svc, P) {
      const x = await consoleMember(svc, ['AUDITOR']);
      const admin = await consoleMember(svc, ['ADMIN']);
      return {
        first: (app) => post(app, '/v1/console/logout', {}, x.post),
        second: (app) => post(app, `${P}/members/${x.principalId}/revoke`, {}, admin.post),
        async check(first, second) {
          assert.equal(second.statusCode, 200, second.body);
          assert.ok([200, 401].includes(first.statusCode), first.body);
          const evs = await events(svc, ['session.ended', 'member.revoked']);
          const ended = evs.filter((e) => e.kind === 'session.ended' && e.actor === x.principalId).length;
          const counted = evs.find((e) => e.kind === 'member.revoked')!.data.sessions_ended;
          assert.equal(ended + counted, 1, JSON.stringify(evs));
          const row = await svc.ts.store.db.selectFrom('sessions').select(['ended_reason']).where('principal_id', '=', x.principalId).executeTakeFirstOrThrow();
          assert.equal(row.ended_reason, counted === 1 ? 'member_revoked' : 'logout');
        },
      };
    },
  },
  {
    title: 'an approval key retired twice at once: one 200, one 409 saying when',
    table: 'approval_keys', write: 'update "approval_keys"%',
    async prepare(svc, P) {
      const approver = await consoleMember(svc, ['APPROVER']);
      const admin = await consoleMember(svc, ['ADMIN']);
      const reg = await post(svc.app, `${P}/principals/${approver.principalId}/approval-keys`, { public_key: ed25519Pair().publicKey }, approver.post);
      assert.equal(reg.statusCode, 201, reg.body);
      const retire = (by: typeof admin) => (app: App) => post(app, `${P}/approval-keys/${reg.json().id}/retire`, {}, by.post);
      return {
        first: retire(approver), second: retire(admin),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 409], `${first.body} ${second.body}`);
          assert.equal((await events(svc, ['approval_key.retired'])).length, 1);
          const winner = first.statusCode === 200 ? first : second;
          const loser = first.statusCode === 409 ? first : second;
          assert.ok(loser.json().detail.includes(winner.json().retired_at), loser.json().detail);
        },
      };
    },
  },
  {
    title: 'an APPROVER demoted while registering its approval key: no live key of a non-APPROVER',
    table: 'approval_keys', write: 'insert into "approval_keys"%',
    async prepare(svc, P) {
      const approver = await consoleMember(svc, ['APPROVER']);
      const admin = await consoleMember(svc, ['ADMIN']);
      return {
        first: (app) => post(app, `${P}/principals/${approver.principalId}/approval-keys`, { public_key: ed25519Pair().publicKey }, approver.post),
        second: (app) => post(app, `${P}/members/${approver.principalId}/roles/APPROVER/revoke`, {}, admin.post),
        async check(first, second) {
          assert.equal(second.statusCode, 200, second.body);
          const evs = await events(svc, ['approval_key.registered', 'role.revoked']);
          if (first.statusCode === 201) assert.equal(evs[0]!.kind, 'approval_key.registered', JSON.stringify(evs));
          else assert.equal(first.json().code, 'not_an_approver');
        },
      };
    },
  },
  {
    title: 'one obligation approved by two APPROVERs at once: one 201, one 409 already_approved, one approval',
    table: 'approval_requests', write: 'update "approval_requests"%',
    async prepare(svc) {
      const [one, two] = [await newApprover(svc), await newApprover(svc)];
      const relay = await svc.member([]);
      const key = { authorization: `Bearer ${relay.key}`, 'content-type': 'application/json' };
      const id = await seedObligation(svc);
      const listed = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/approvals?limit=500`, headers: key });
      const { statement } = listed.json().approvals.find((o: { id: string }) => o.id === id);
      const approve = (who: typeof one) => (app: App) => post(app, `/v1/projects/${svc.projectId}/approvals`, { approval_request_id: id, key_id: who.keyId, signature: who.sign(statement) }, key);
      return {
        first: approve(one), second: approve(two),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode].sort(), [201, 409], `${first.body} ${second.body}`);
          assert.equal((first.statusCode === 409 ? first : second).json().code, 'already_approved');
          assert.equal((await events(svc, ['approval.recorded'])).length, 1);
          const rows = await svc.ts.store.db.selectFrom('approvals').select('key_id').where('approval_request_id', '=', id).execute();
          assert.deepEqual(rows.map((r) => r.key_id), [(first.statusCode === 201 ? one : two).keyId]);
        },
      };
    },
  },
  {
    title: 'an UNKNOWN execution resolved on both planes at once: one 200, one 409 conflict, one event',
    table: 'executions', write: 'update "executions"%',
    async prepare(svc, P) {
      const admin = await consoleMember(svc, ['ADMIN']);
      const holder = await svc.member(['ADMIN'], undefined, 'person');
      const id = await seedInFlight(svc.ts.store, svc.projectId);
      await svc.ts.store.db.updateTable('executions').set({ status: 'UNKNOWN', note: 'stopped mid-call' }).where('id', '=', id).execute();
      const key = { authorization: `Bearer ${holder.key}`, 'content-type': 'application/json' };
      return {
        first: (app) => post(app, `${P}/executions/${id}/resolve`, { outcome: 'FAILED', note: 'no charge' }, admin.post),
        second: (app) => post(app, `/v1/projects/${svc.projectId}/executions/resolve`, { execution_id: id, outcome: 'SUCCEEDED', note: 'charged' }, key),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 409], `${first.body} ${second.body}`);
          const evs = await events(svc, ['execution.resolved']);
          assert.equal(evs.length, 1);
          const row = await svc.ts.store.db.selectFrom('executions').select(['status']).where('id', '=', id).executeTakeFirstOrThrow();
          assert.equal(row.status, first.statusCode === 200 ? 'FAILED' : 'SUCCEEDED');
        },
      };
    },
  },
  {
    title: 'one role granted twice at once: one changed, one event',
    table: 'role_grants', write: 'insert into "role_grants"%',
    async prepare(svc, P) {
      const [x, y] = [await consoleMember(svc, ['ADMIN']), await consoleMember(svc, ['ADMIN'])];
      const target = await svc.member(['AUDITOR']);
      const grant = (by: typeof x) => (app: App) => post(app, `${P}/members/${target.principalId}/roles`, { role: 'APPROVER' }, by.post);
      return {
        first: grant(x), second: grant(y),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode], [200, 200], `${first.body} ${second.body}`);
          assert.deepEqual([first.json().changed, second.json().changed].sort(), [false, true]);
          assert.equal((await events(svc, ['role.granted'])).filter((e) => e.data.principal_id === target.principalId).length, 1);
        },
      };
    },
  },
  {
    title: 'two SoD documents saved at once: the later saved is the one stored, and its before is the earlier one',
    table: 'sod_settings', write: 'insert into "sod_settings"%',
    async prepare(svc) {
      const [k1, k2] = [await svc.keyHeader(['ADMIN']), await svc.keyHeader(['ADMIN'])];
      const doc = (fourEyes: boolean) => ({ exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: fourEyes });
      const put = (key: typeof k1, fourEyes: boolean) => (app: App) => app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/sod`, headers: key, payload: doc(fourEyes) });
      return {
        first: put(k1, true), second: put(k2, false),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode], [200, 200], `${first.body} ${second.body}`);
          const evs = await events(svc, ['sod.updated']);
          assert.equal(evs.length, 2);
          assert.deepEqual(evs[1]!.data.before, evs[0]!.data.after, 'the second save read what the first saved');
          const stored = await svc.ts.store.db.selectFrom('sod_settings').select('document').where('project_id', '=', svc.projectId).executeTakeFirstOrThrow();
          assert.deepEqual(JSON.parse(stored.document), evs[1]!.data.after);
        },
      };
    },
  },
];

pairRaceSuites('console writes raced in pairs', RACES);
