// The project's roles lock (services/identity/members.ts) orders every change of roles and
// memberships, every key minted or revoked in the console, every approval key an ADMIN retires of
// another's, and the machine plane's member creation and SoD save, one after another, so each
// reads what the one before it committed (and an actor, person or key, is authorized again under
// it). Each race below stops its first request between what it read and what it writes (the test
// holds the written table in EXCLUSIVE mode from a session of its own: reads go on, writes wait),
// sends the second from another instance, then lets both go. With the lock the second waits for
// the first to commit; without it both act on what they read before either wrote, and the check fails.
// On SQLite lockFor does nothing: its one writer runs each transaction whole (BEGIN IMMEDIATE), so
// the two never interleave. There each race runs one request after the other, in both orders,
// under the same check. (A request can still be authenticated before a loss that commits before its
// transaction begins; the re-check inside that transaction answers it as arriving after. A race
// marked betweenAuthentication is also run so on SQLite: the loss sent and answered while the
// first waits between its authentication and its handler.)
import assert from 'node:assert/strict';
import type { Role } from '../../src/domain/access/roles.ts';
import { consoleMember, type ConsoleMember } from '../support/console.ts';
import { newApprover } from '../support/approvals.ts';
import { pairRaceSuites, post, type App, type PairRace as Race } from '../support/interleave.ts';
import type { TestService } from '../support/service.ts';


const rolesOf = async (svc: TestService, id: string) =>
  (await svc.ts.store.db.selectFrom('role_grants').select('role').where('project_id', '=', svc.projectId).where('principal_id', '=', id).execute()).map((r) => r.role).sort();

/** Removes the bootstrap ADMIN, so that the project's ADMINs are those the race made. */
async function onlyAdmins(svc: TestService, P: string, count: number): Promise<ConsoleMember[]> {
  const admins = await Promise.all(Array.from({ length: count }, () => consoleMember(svc, ['ADMIN'])));
  const boot = (await svc.ts.store.db.selectFrom('principals').select('id').where('name', '=', 'admin').executeTakeFirstOrThrow()).id;
  const res = await svc.app.inject({ method: 'POST', url: `${P}/members/${boot}/revoke`, headers: admins[0]!.post, payload: {} });
  assert.equal(res.statusCode, 200, res.body);
  return admins;
}

/**
 * Where `actor`'s event of `kind` and the loss of its ADMIN role (demotion or removal) stand in
 * the audit log (-1: absent): an ADMIN acts as one only before it loses the role.
 */
async function actedBeforeLoss(svc: TestService, actor: string, kind: string): Promise<{ acted: number; lost: number }> {
  const events = await svc.ts.store.db.selectFrom('audit_events').select(['kind', 'actor', 'data']).where('project_id', '=', svc.projectId).orderBy('seq').execute();
  const lost = events.findIndex((e) => ['role.revoked', 'member.revoked'].includes(e.kind) && JSON.parse(e.data).principal_id === actor);
  return { acted: events.findIndex((e) => e.kind === kind && e.actor === actor), lost };
}

/** The ADMIN whose loss races its own act, the ADMIN that takes it away, and an AUDITOR (with a key) it acts on. */
async function loserAndTarget(svc: TestService, P: string) {
  const [loser, other] = await onlyAdmins(svc, P, 2);
  return { loser: loser!, other: other!, target: await svc.member(['AUDITOR']) };
}

const lossUrl = (P: string, how: 'demoted' | 'removed', id: string) => (how === 'demoted' ? `${P}/members/${id}/roles/ADMIN/revoke` : `${P}/members/${id}/revoke`);

/** An ADMIN mints a key for another principal while it loses ADMIN (`how`): no key of another it holds the secret of outlives that. */
const mintWhileLosing = (how: 'demoted' | 'removed'): Race => ({
  title: `an ADMIN ${how} while it mints a key for another keeps no live key of that other`,
  table: 'api_keys',
  write: 'insert into "api_keys"%',
  betweenAuthentication: true,
  async prepare(svc, P) {
    const { loser: minter, other, target: holder } = await loserAndTarget(svc, P);
    return {
      first: (app) => post(app, `${P}/api-keys`, { name: 'for another', roles: ['AUDITOR'], principal_id: holder.principalId }, minter.post),
      second: (app) => post(app, lossUrl(P, how, minter.principalId), {}, other.post),
      async check(mint, loss) {
        assert.equal(loss.statusCode, 200, loss.body);
        // Minted before the loss (and revoked by it), or refused after it (403 once demoted, 401 once
        // removed: its session ended): never minted by a former ADMIN.
        assert.ok([201, 401, 403].includes(mint.statusCode), mint.body);
        const live = await svc.ts.store.db.selectFrom('api_keys').select('id').where('project_id', '=', svc.projectId)
          .where('created_by', '=', minter.principalId).where('revoked_at', 'is', null).execute();
        assert.deepEqual(live, [], `no live key minted by the ${how} ADMIN`);
        if (mint.statusCode === 201) {
          const use = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/sod`, headers: { authorization: `Bearer ${mint.json().secret}` } });
          assert.equal(use.statusCode, 401);
        }
      },
    };
  },
});

/** An ADMIN grants ADMIN to another while it loses ADMIN (`how`): the grant commits before the loss or not at all. */
const grantWhileLosing = (how: 'demoted' | 'removed'): Race => ({
  title: `an ADMIN ${how} while it grants ADMIN to another grants nothing after that`,
  table: 'role_grants',
  write: 'delete from "role_grants"%',
  async prepare(svc, P) {
    const { loser: granter, other, target: friend } = await loserAndTarget(svc, P);
    return {
      // The loss goes first and stops at its delete; the grant is authorized meanwhile, as the granter is still ADMIN.
      first: (app) => post(app, lossUrl(P, how, granter.principalId), {}, other.post),
      second: (app) => post(app, `${P}/members/${friend.principalId}/roles`, { role: 'ADMIN' }, granter.post),
      async check(loss, grant) {
        assert.equal(loss.statusCode, 200, loss.body);
        assert.ok([200, 401, 403].includes(grant.statusCode), grant.body);
        const { acted, lost } = await actedBeforeLoss(svc, granter.principalId, 'role.granted');
        assert.ok(grant.statusCode === 200 ? acted >= 0 && acted < lost : acted === -1, `${grant.body}: granted at ${acted}, ${how} at ${lost}`);
        assert.deepEqual(await rolesOf(svc, friend.principalId), grant.statusCode === 200 ? ['ADMIN', 'AUDITOR'] : ['AUDITOR']);
      },
    };
  },
});

/**
 * The ADMIN key acting on the machine plane loses its authority (`how`) from the console at the
 * same moment: its request, authenticated as the loss waits at its write, commits before the loss
 * or answers as it would after it (401 once the key is revoked or its holder removed, 403 once
 * the holder is demoted).
 */
const keyActsWhileLosing = (how: 'revoked' | 'demoted' | 'removed', act: 'creates a member' | 'saves the SoD document'): Race => ({
  title: `an ADMIN key ${how === 'revoked' ? 'revoked' : `whose holder is ${how}`} while it ${act} changes nothing after that`,
  table: how === 'revoked' ? 'api_keys' : how === 'demoted' ? 'role_grants' : 'memberships',
  write: how === 'revoked' ? 'update "api_keys"%' : how === 'demoted' ? 'delete from "role_grants"%' : 'update "memberships"%',
  async prepare(svc, P) {
    const [admin] = await onlyAdmins(svc, P, 1);
    const holder = await svc.member(['ADMIN']);
    const key = { authorization: `Bearer ${holder.key}`, 'content-type': 'application/json' };
    const machine = `/v1/projects/${svc.projectId}`;
    const kind = act === 'creates a member' ? 'principal.created' : 'sod.updated';
    return {
      first: (app) => post(app, how === 'revoked' ? `${P}/api-keys/${holder.keyId}/revoke` : lossUrl(P, how, holder.principalId), {}, admin!.post),
      second: (app) => (act === 'creates a member'
        ? post(app, `${machine}/principals`, { kind: 'service', name: 'made-by-key', roles: ['AUDITOR'] }, key)
        : app.inject({ method: 'PUT', url: `${machine}/sod`, headers: key, payload: { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR'], ['APPROVER', 'AUDITOR']], four_eyes_policy_activation: false } })),
      async check(loss, acted) {
        assert.equal(loss.statusCode, 200, loss.body);
        const events = await svc.ts.store.db.selectFrom('audit_events').select(['kind', 'actor', 'data']).where('project_id', '=', svc.projectId).orderBy('seq').execute();
        const lossOf = { revoked: ['api_key.revoked', 'key_id', holder.keyId], demoted: ['role.revoked', 'principal_id', holder.principalId], removed: ['member.revoked', 'principal_id', holder.principalId] }[how];
        const lost = events.findIndex((e) => e.kind === lossOf[0] && JSON.parse(e.data)[lossOf[1]!] === lossOf[2]);
        const at = events.findIndex((e) => e.kind === kind && e.actor === holder.keyId);
        assert.ok(lost >= 0);
        if (acted.statusCode === 200 || acted.statusCode === 201) {
          assert.ok(at >= 0 && at < lost, `${act} at ${at} of the audit log, the key ${how} at ${lost}`);
        } else {
          assert.equal(acted.statusCode, how === 'demoted' ? 403 : 401, acted.body);
          assert.equal(at, -1, 'a refused request wrote nothing');
        }
      },
    };
  },
});

/**
 * An ADMIN retires an APPROVER's approval key while it loses ADMIN (`how`): ADMIN is what permits
 * it, so it commits before the loss or is refused as any member's retire of another's key is.
 */
const retireWhileLosing = (how: 'demoted' | 'removed'): Race => ({
  title: `an ADMIN ${how} while it retires another's approval key retires nothing after that`,
  table: 'approval_keys',
  write: 'update "approval_keys"%',
  betweenAuthentication: true,
  async prepare(svc, P) {
    const [retirer, other] = await onlyAdmins(svc, P, 2);
    const approver = await newApprover(svc);
    return {
      first: (app) => post(app, `${P}/approval-keys/${approver.keyId}/retire`, {}, retirer!.post),
      second: (app) => post(app, lossUrl(P, how, retirer!.principalId), {}, other!.post),
      async check(retire, loss) {
        assert.equal(loss.statusCode, 200, loss.body);
        // Retired while still ADMIN, or refused once not: 403 forbidden, as for a member that never
        // held ADMIN (or 401 once removed, its session ended), and the key stays live.
        assert.ok([200, 401, 403].includes(retire.statusCode), retire.body);
        if (retire.statusCode === 403) assert.equal(retire.json().code, 'forbidden');
        const { acted, lost } = await actedBeforeLoss(svc, retirer!.principalId, 'approval_key.retired');
        assert.ok(lost >= 0);
        assert.ok(retire.statusCode === 200 ? acted >= 0 && acted < lost : acted === -1, `${retire.body}: retired at ${acted}, ${how} at ${lost}`);
        const key = await svc.ts.store.db.selectFrom('approval_keys').select('retired_at').where('id', '=', approver.keyId).executeTakeFirstOrThrow();
        assert.equal(key.retired_at === null, retire.statusCode !== 200);
      },
    };
  },
});

const RACES: Race[] = [
  mintWhileLosing('demoted'),
  mintWhileLosing('removed'),
  grantWhileLosing('demoted'),
  grantWhileLosing('removed'),
  retireWhileLosing('demoted'),
  retireWhileLosing('removed'),
  ...(['revoked', 'demoted', 'removed'] as const).flatMap((how) => [keyActsWhileLosing(how, 'creates a member'), keyActsWhileLosing(how, 'saves the SoD document')]),
  {
    title: 'two ADMINs demoting each other leave exactly one ADMIN',
    table: 'role_grants',
    write: 'delete from "role_grants"%',
    async prepare(svc, P) {
      const [a, b] = await onlyAdmins(svc, P, 2);
      return {
        first: (app) => post(app, `${P}/members/${b!.principalId}/roles/ADMIN/revoke`, {}, a!.post),
        second: (app) => post(app, `${P}/members/${a!.principalId}/roles/ADMIN/revoke`, {}, b!.post),
        async check(first, second) {
          const statuses = [first.statusCode, second.statusCode].sort();
          assert.equal(statuses[0], 200, `${first.body} ${second.body}`);
          // Refused by the last-ADMIN rule (409), or because its actor is no longer ADMIN (403).
          assert.ok([403, 409].includes(statuses[1]!), `${first.body} ${second.body}`);
          const admins = await svc.ts.store.db.selectFrom('role_grants').select('principal_id').where('project_id', '=', svc.projectId).where('role', '=', 'ADMIN').execute();
          assert.equal(admins.length, 1, 'exactly one ADMIN remains');
        },
      };
    },
  },
  {
    title: 'two grants of roles SoD keeps apart: the principal ends with one of them',
    table: 'role_grants',
    write: 'insert into "role_grants"%',
    async prepare(svc, P) {
      const [a, b] = await onlyAdmins(svc, P, 2);
      const target = await svc.member(['AUDITOR']);
      const grant = (role: Role, by: ConsoleMember) => (app: App) => post(app, `${P}/members/${target.principalId}/roles`, { role }, by.post);
      return {
        first: grant('ADMIN', a!),
        second: grant('POLICY_AUTHOR', b!),
        async check(first, second) {
          const refused = [first, second].filter((r) => r.statusCode !== 200);
          assert.equal(refused.length, 1, `${first.body} ${second.body}`);
          assert.equal(refused[0]!.statusCode, 409);
          assert.equal(refused[0]!.json().code, 'sod_conflict');
          const held = await rolesOf(svc, target.principalId);
          assert.ok(!(held.includes('ADMIN') && held.includes('POLICY_AUTHOR')), `holds ${held.join(', ')}`);
        },
      };
    },
  },
  {
    title: 'two ADMINs adding the same person: one adds it, the other is told it is already a member',
    table: 'memberships',
    write: 'insert into "memberships"%',
    async prepare(svc, P) {
      const [a, b] = await onlyAdmins(svc, P, 2);
      const person = await svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: 'added-twice', password: 'a long enough passphrase' } });
      assert.equal(person.statusCode, 201, person.body);
      const add = (roles: Role[], by: ConsoleMember) => (app: App) => post(app, `${P}/members`, { name: 'added-twice', roles }, by.post);
      return {
        first: add(['AUDITOR'], a!),
        second: add(['APPROVER'], b!),
        async check(first, second) {
          assert.deepEqual([first.statusCode, second.statusCode].sort(), [201, 409], `${first.body} ${second.body}`);
          const refused = first.statusCode === 409 ? first : second;
          assert.equal(refused.json().code, 'already_member');
          const added = first.statusCode === 201 ? first : second;
          assert.deepEqual(await rolesOf(svc, person.json().principal_id), added.json().roles, 'only the added roles are held');
        },
      };
    },
  },
  {
    title: 'an SoD document saved while a member is granted a pair it forbids: one of the two is refused',
    table: 'sod_settings',
    write: 'insert into "sod_settings"%',
    async prepare(svc, P) {
      const [admin] = await onlyAdmins(svc, P, 1);
      const key = await svc.keyHeader(['ADMIN']);
      const target = await svc.member(['AUDITOR']);
      const document = { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR'], ['APPROVER', 'AUDITOR']], four_eyes_policy_activation: false };
      return {
        first: (app) => app.inject({ method: 'PUT', url: `/v1/projects/${svc.projectId}/sod`, headers: key, payload: document }),
        second: (app) => post(app, `${P}/members/${target.principalId}/roles`, { role: 'APPROVER' }, admin!.post),
        async check(put, grant) {
          const refused = [put, grant].filter((r) => r.statusCode !== 200);
          assert.equal(refused.length, 1, `${put.body} ${grant.body}`);
          assert.equal(refused[0]!.json().code, 'sod_conflict');
          const held = await rolesOf(svc, target.principalId);
          const saved = put.statusCode === 200;
          assert.ok(!(saved && held.includes('APPROVER') && held.includes('AUDITOR')), `holds ${held.join(', ')} though the saved document forbids the pair`);
        },
      };
    },
  },
  {
    title: 'an ADMIN demoted while it revokes another\'s key: the audit log has the revocation before the demotion',
    table: 'api_keys',
    write: 'update "api_keys"%',
    betweenAuthentication: true,
    async prepare(svc, P) {
      const { loser: revoker, other, target: holder } = await loserAndTarget(svc, P);
      return {
        first: (app) => post(app, `${P}/api-keys/${holder.keyId}/revoke`, {}, revoker.post),
        second: (app) => post(app, `${P}/members/${revoker.principalId}/roles/ADMIN/revoke`, {}, other.post),
        async check(revoke, demote) {
          assert.equal(demote.statusCode, 200, demote.body);
          // Revoked while still ADMIN, or refused once demoted (the key then stays live).
          assert.ok([200, 403].includes(revoke.statusCode), revoke.body);
          const { acted, lost } = await actedBeforeLoss(svc, revoker.principalId, 'api_key.revoked');
          assert.ok(lost >= 0);
          assert.ok(revoke.statusCode === 200 ? acted >= 0 && acted < lost : acted === -1, `revoked at ${acted}, demoted at ${lost}`);
        },
      };
    },
  },
];

pairRaceSuites('the roles lock orders changes of roles and key minting', RACES);
