// Members, roles, SoD, API keys, login and registration: the rules and the bad inputs.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { getSod } from '../../src/services/identity/sod.ts';
import { grantRole, revokeMember, revokeRole } from '../../src/services/identity/members.ts';
import { mintApiKey } from '../../src/services/identity/api-keys.ts';
import { backends } from '../support/backends.ts';
import { adminConsoleSuite, consoleMember } from '../support/console.ts';
import { checkedService, startService } from '../support/service.ts';

for (const backend of backends()) {
  describe(`identity and access (${backend.name})`, () => {
    const suite = adminConsoleSuite(backend);
    const post = (url: string, payload: unknown, headers: Record<string, string> = suite.admin.post) => suite.svc.app.inject({ method: 'POST', url, headers, payload: JSON.stringify(payload) });
    const auditCount = async () => Number((await suite.svc.ts.store.db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const rolesOf = async (id: string) => (await suite.svc.ts.store.db.selectFrom('role_grants').select('role').where('project_id', '=', suite.svc.projectId).where('principal_id', '=', id).execute()).map((r) => r.role).sort();

    test('register, add as member by name, grant and revoke roles, each change audited', async () => {
      const reg = await suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: 'Alice@Example.org', password: 'a long enough passphrase' } });
      assert.equal(reg.statusCode, 201);
      assert.equal(reg.json().name, 'alice@example.org');
      const id = reg.json().principal_id;
      // A registered person sees no project until added.
      const s = await suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name: 'alice@example.org', password: 'a long enough passphrase' } });
      const cookie = s.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
      assert.deepEqual((await suite.svc.app.inject({ method: 'GET', url: '/v1/console/projects', headers: { cookie } })).json(), { projects: [] });
      const before = await auditCount();
      const add = await post(`${suite.P}/members`, { name: 'alice@example.org', roles: ['AUDITOR'] });
      assert.equal(add.statusCode, 201);
      assert.deepEqual(add.json().roles, ['AUDITOR']);
      const grant = await post(`${suite.P}/members/${id}/roles`, { role: 'APPROVER' });
      assert.equal(grant.statusCode, 200);
      assert.deepEqual(grant.json().member.roles, ['APPROVER', 'AUDITOR']);
      assert.equal((await post(`${suite.P}/members/${id}/roles`, { role: 'APPROVER' })).json().changed, false);
      const revoke = await post(`${suite.P}/members/${id}/roles/AUDITOR/revoke`, {});
      assert.deepEqual(revoke.json().member.roles, ['APPROVER']);
      const kinds = (await suite.svc.ts.store.db.selectFrom('audit_events').select('kind').orderBy('seq').execute()).slice(before).map((e) => e.kind);
      assert.deepEqual(kinds, ['member.added', 'role.granted', 'role.granted', 'role.revoked']);
      const projects = (await suite.svc.app.inject({ method: 'GET', url: '/v1/console/projects', headers: { cookie } })).json().projects;
      assert.deepEqual(projects.map((p: { id: string; roles: string[] }) => [p.id, p.roles]), [[suite.svc.projectId, ['APPROVER']]], 'roles are read live, not from the session');
    });

    test('bad input gives a clear 4xx and changes nothing', async () => {
      const target = await suite.svc.member(['APPROVER']);
      const person = await suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: 'not-yet-member', password: 'another long passphrase' } });
      const before = await auditCount();
      const cases: [string, Promise<{ statusCode: number; json(): any }>, number, string][] = [
        ['invalid role', post(`${suite.P}/members/${target.principalId}/roles`, { role: 'SUPERUSER' }), 400, 'invalid_request'],
        ['invalid role in path', post(`${suite.P}/members/${target.principalId}/roles/ROOT/revoke`, {}), 400, 'invalid_request'],
        ['unknown principal', post(`${suite.P}/members/prn_00000000000000000000000000/roles`, { role: 'AUDITOR' }), 404, 'not_found'],
        ['malformed principal id', post(`${suite.P}/members/bob/roles`, { role: 'AUDITOR' }), 400, 'invalid_request'],
        ['grant to a non-member', post(`${suite.P}/members/${person.json().principal_id}/roles`, { role: 'AUDITOR' }), 422, 'not_a_member'],
        ['add unknown name', post(`${suite.P}/members`, { name: 'nobody-here', roles: [] }), 404, 'not_found'],
        ['add with both id and name', post(`${suite.P}/members`, { name: 'x', principal_id: target.principalId }), 400, 'invalid_request'],
        ['add an existing member', post(`${suite.P}/members`, { principal_id: target.principalId }), 409, 'already_member'],
        ['over-long name', post(`${suite.P}/members`, { name: 'n'.repeat(129) }), 400, 'invalid_request'],
        ['unknown field', post(`${suite.P}/members/${target.principalId}/roles`, { role: 'AUDITOR', admin: true }), 400, 'invalid_request'],
        ['key with a role the holder lacks', post(`${suite.P}/api-keys`, { name: 'k', roles: ['POLICY_AUTHOR'] }), 422, 'role_not_held'],
        ['key with a blank name', post(`${suite.P}/api-keys`, { name: '   ', roles: [] }), 400, 'invalid_request'],
        ['key whose name holds a newline', post(`${suite.P}/api-keys`, { name: 'ci\nadmin', roles: [] }), 400, 'invalid_request'],
        ['key whose name holds a bidi override', post(`${suite.P}/api-keys`, { name: 'yek\u202eci', roles: [] }), 400, 'invalid_request'],
        ['key for a non-member', post(`${suite.P}/api-keys`, { name: 'k', roles: [], principal_id: person.json().principal_id }), 422, 'not_a_member'],
        ['revoke an unknown key', post(`${suite.P}/api-keys/key_00000000000000000000000000/revoke`, {}), 404, 'not_found'],
        ['weak password', suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: 'weakling', password: 'short' } }), 400, 'invalid_request'],
        ['repetitive password', suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: 'weakling', password: 'aaaaaaaaaaaaaaaa' } }), 400, 'invalid_request'],
        ['huge password', suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: 'weakling', password: 'x'.repeat(10_000) } }), 400, 'invalid_request'],
        ['password over 256', suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: 'weakling', password: 'xy1'.repeat(100) } }), 400, 'invalid_request'],
        ['bad name', suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: ' spaced name ', password: 'a long enough passphrase' } }), 400, 'invalid_request'],
        ['taken name', suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: 'admin', password: 'a long enough passphrase' } }), 409, 'name_taken'],
      ];
      for (const [name, p, status, code] of cases) {
        const res = await p;
        assert.equal(res.statusCode, status, `${name}: ${JSON.stringify(res.json())}`);
        assert.equal(res.json().code, code, name);
      }
      assert.equal(await auditCount(), before, 'no refused request wrote anything');
      assert.deepEqual(await rolesOf(target.principalId), ['APPROVER']);
      assert.equal(await suite.svc.ts.store.db.selectFrom('principals').select('id').where('name', '=', 'weakling').executeTakeFirst(), undefined);
    });

    test('the last ADMIN can be neither demoted nor removed', async () => {
      const solo = await startService(backend);
      try {
        const a = await consoleMember(solo, ['ADMIN']);
        const url = `/v1/console/projects/${solo.projectId}`;
        const bootAdmin = (await solo.ts.store.db.selectFrom('principals').select('id').where('name', '=', 'admin').executeTakeFirstOrThrow()).id;
        assert.equal((await solo.app.inject({ method: 'POST', url: `${url}/members/${bootAdmin}/revoke`, headers: a.post, payload: {} })).statusCode, 200);
        const demote = await solo.app.inject({ method: 'POST', url: `${url}/members/${a.principalId}/roles/ADMIN/revoke`, headers: a.post, payload: {} });
        assert.equal(demote.statusCode, 409);
        assert.equal(demote.json().code, 'last_admin');
        const remove = await solo.app.inject({ method: 'POST', url: `${url}/members/${a.principalId}/revoke`, headers: a.post, payload: {} });
        assert.equal(remove.json().code, 'last_admin');
        assert.deepEqual((await solo.ts.store.db.selectFrom('role_grants').select('role').where('principal_id', '=', a.principalId).execute()).map((r) => r.role), ['ADMIN']);
      } finally { await solo.stop(); }
    });

    test('the last person ADMIN stays one though a service holds ADMIN: no one could mint a key or act on the console after', async () => {
      const solo = await startService(backend);
      try {
        const url = `/v1/console/projects/${solo.projectId}`;
        const a = await consoleMember(solo, ['ADMIN']);
        const bootAdmin = (await solo.ts.store.db.selectFrom('principals').select('id').where('name', '=', 'admin').executeTakeFirstOrThrow()).id;
        assert.equal((await solo.app.inject({ method: 'POST', url: `${url}/members/${bootAdmin}/revoke`, headers: a.post, payload: {} })).statusCode, 200);
        // The one person ADMIN gives ADMIN to a service and mints it a key, as the console lets it.
        const robot = (await solo.member(['ADMIN'], 'robot-admin', 'service')).principalId;
        const minted = await solo.app.inject({ method: 'POST', url: `${url}/api-keys`, headers: a.post, payload: { principal_id: robot, name: 'robot', roles: ['ADMIN'] } });
        assert.equal(minted.statusCode, 201, minted.body);
        // Demoting or removing itself would revoke that key (its minter's) and leave only the service.
        for (const path of [`${url}/members/${a.principalId}/roles/ADMIN/revoke`, `${url}/members/${a.principalId}/revoke`]) {
          const res = await solo.app.inject({ method: 'POST', url: path, headers: a.post, payload: {} });
          assert.equal(res.statusCode, 409, `${path}: ${res.body}`);
          assert.equal(res.json().code, 'last_admin');
        }
        // A service's ADMIN never keeps a project administrable, so taking it is not the last ADMIN's.
        const demoteRobot = await solo.app.inject({ method: 'POST', url: `${url}/members/${robot}/roles/ADMIN/revoke`, headers: a.post, payload: {} });
        assert.equal(demoteRobot.statusCode, 200, demoteRobot.body);
      } finally { await solo.stop(); }
    });

    test('concurrency: two ADMINs demoting each other at once leave exactly one ADMIN', async () => {
      const solo = await startService(backend);
      try {
        const url = `/v1/console/projects/${solo.projectId}`;
        const a = await consoleMember(solo, ['ADMIN']);
        const b = await consoleMember(solo, ['ADMIN']);
        const bootAdmin = (await solo.ts.store.db.selectFrom('principals').select('id').where('name', '=', 'admin').executeTakeFirstOrThrow()).id;
        await solo.app.inject({ method: 'POST', url: `${url}/members/${bootAdmin}/revoke`, headers: a.post, payload: {} });
        const [ra, rb] = await Promise.all([
          solo.app.inject({ method: 'POST', url: `${url}/members/${b.principalId}/roles/ADMIN/revoke`, headers: a.post, payload: {} }),
          solo.app.inject({ method: 'POST', url: `${url}/members/${a.principalId}/roles/ADMIN/revoke`, headers: b.post, payload: {} }),
        ]);
        // The loser is refused either by the last-ADMIN rule (409) or, when the winner committed
        // first, because it is no longer ADMIN (403): never both succeed.
        const statuses = [ra.statusCode, rb.statusCode].sort();
        assert.equal(statuses[0], 200, `${ra.body} ${rb.body}`);
        assert.ok([403, 409].includes(statuses[1]!), `one is refused: ${ra.body} ${rb.body}`);
        const admins = await solo.ts.store.db.selectFrom('role_grants').select('principal_id').where('project_id', '=', solo.projectId).where('role', '=', 'ADMIN').execute();
        assert.equal(admins.length, 1);
      } finally { await solo.stop(); }
    });

    test('concurrency: the last-ADMIN rule holds when the service is called at once (lockFor)', async () => {
      const solo = await startService(backend);
      try {
        const a = await solo.member(['ADMIN'], undefined, 'person');
        const b = await solo.member(['ADMIN'], undefined, 'person');
        const bootAdmin = (await solo.ts.store.db.selectFrom('principals').select('id').where('name', '=', 'admin').executeTakeFirstOrThrow()).id;
        await revokeMember(solo.ts.store, { projectId: solo.projectId, principalId: bootAdmin, actor: 'test' }, new Date());
        const results = await Promise.allSettled([
          revokeRole(solo.ts.store, { projectId: solo.projectId, principalId: a.principalId, role: 'ADMIN', actor: 'test' }, new Date()),
          revokeRole(solo.ts.store, { projectId: solo.projectId, principalId: b.principalId, role: 'ADMIN', actor: 'test' }, new Date()),
          revokeMember(solo.ts.store, { projectId: solo.projectId, principalId: a.principalId, actor: 'test' }, new Date()),
          revokeMember(solo.ts.store, { projectId: solo.projectId, principalId: b.principalId, actor: 'test' }, new Date()),
        ]);
        assert.ok(results.some((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'last_admin'));
        const admins = await solo.ts.store.db.selectFrom('role_grants as g').innerJoin('memberships as m', (j) => j.onRef('m.principal_id', '=', 'g.principal_id').onRef('m.project_id', '=', 'g.project_id'))
          .select('g.principal_id').where('g.project_id', '=', solo.projectId).where('g.role', '=', 'ADMIN').where('m.revoked_at', 'is', null).execute();
        assert.equal(admins.length, 1, 'exactly one ADMIN remains');
      } finally { await solo.stop(); }
    });

    test('concurrency: granting and revoking the same role at once end in a state the audit log explains', async () => {
      const other = await consoleMember(suite.svc, ['ADMIN']);
      for (let round = 0; round < 5; round++) {
        const target = await suite.svc.member(round % 2 ? ['AUDITOR'] : []);
        const before = await auditCount();
        const results = await Promise.all([
          post(`${suite.P}/members/${target.principalId}/roles`, { role: 'AUDITOR' }),
          post(`${suite.P}/members/${target.principalId}/roles/AUDITOR/revoke`, {}, other.post),
          post(`${suite.P}/members/${target.principalId}/roles`, { role: 'AUDITOR' }, other.post),
          post(`${suite.P}/members/${target.principalId}/roles/AUDITOR/revoke`, {}),
        ]);
        for (const r of results) assert.equal(r.statusCode, 200, r.body);
        const grants = await rolesOf(target.principalId);
        assert.ok(grants.length <= 1, 'the role is held at most once');
        // Replaying the audited changes from the start reproduces the final state.
        const events = (await suite.svc.ts.store.db.selectFrom('audit_events').select(['kind', 'data']).orderBy('seq').execute()).slice(before)
          .filter((e) => JSON.parse(e.data).principal_id === target.principalId);
        let held = round % 2 === 1;
        for (const e of events) {
          assert.equal(e.kind === 'role.granted' ? held : !held, false, 'every audited change was a real change');
          held = e.kind === 'role.granted';
        }
        assert.equal(held, grants.includes('AUDITOR'));
        assert.equal(events.length, results.filter((r) => r.json().changed).length);
      }
    });

    test('SoD: ADMIN cannot take POLICY_AUTHOR by granting it, by minting a key, or by being ADMIN', async () => {
      const grant = await post(`${suite.P}/members/${suite.admin.principalId}/roles`, { role: 'POLICY_AUTHOR' });
      assert.equal(grant.statusCode, 409);
      assert.equal(grant.json().code, 'sod_conflict');
      const key = await post(`${suite.P}/api-keys`, { name: 'k', roles: ['ADMIN', 'POLICY_AUTHOR'] });
      assert.equal(key.json().code, 'role_not_held');
      assert.deepEqual(await rolesOf(suite.admin.principalId), ['ADMIN']);
      // Nor by minting a POLICY_AUTHOR key for someone else: the minter would hold its secret.
      const author = await consoleMember(suite.svc, ['POLICY_AUTHOR']);
      const forOther = await post(`${suite.P}/api-keys`, { name: 'k', roles: ['POLICY_AUTHOR'], principal_id: author.principalId });
      assert.equal(forOther.statusCode, 403);
      assert.equal(forOther.json().code, 'separation_of_duties');
      // The author mints its own; a non-ADMIN cannot mint for another principal.
      const own = await post(`${suite.P}/api-keys`, { name: 'mine', roles: ['POLICY_AUTHOR'] }, author.post);
      assert.equal(own.statusCode, 201, own.body);
      assert.equal(own.json().principal_id, author.principalId);
      const activate = await suite.svc.app.inject({ method: 'GET', url: `/v1/projects/${suite.svc.projectId}/policy/versions`, headers: { authorization: `Bearer ${own.json().secret}` } });
      assert.equal(activate.statusCode, 200);
      const notMine = await post(`${suite.P}/api-keys`, { name: 'k', roles: [], principal_id: suite.admin.principalId }, author.post);
      assert.equal(notMine.statusCode, 403);
      assert.equal(notMine.json().code, 'forbidden');
      const adminKey = await suite.svc.keyHeader(['ADMIN']);
      const sodUrl = `/v1/projects/${suite.svc.projectId}/sod`;
      const put = (doc: unknown) => suite.svc.app.inject({ method: 'PUT', url: sodUrl, headers: adminKey, payload: doc as object });
      // ADMIN and POLICY_AUTHOR stay apart whatever the document says: an ADMIN writes it, so it
      // could otherwise lift the pair and grant itself the role (spec 5.5).
      const dropped = await put({ exclusive_roles: [], four_eyes_policy_activation: true });
      assert.equal(dropped.statusCode, 400, dropped.body);
      assert.deepEqual(dropped.json().errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]), [['/exclusive_roles', 'required_pair']]);
      const selfGrant = await post(`${suite.P}/members/${suite.admin.principalId}/roles`, { role: 'POLICY_AUTHOR' });
      assert.equal(selfGrant.statusCode, 409);
      assert.equal(selfGrant.json().code, 'sod_conflict');
      // A document saved before the pair was required reads with it.
      await suite.svc.ts.store.db.insertInto('sod_settings').values({ project_id: suite.svc.projectId, document: '{"exclusive_roles":[],"four_eyes_policy_activation":true}', updated_at: new Date().toISOString(), updated_by: 'test' })
        .onConflict((oc) => oc.column('project_id').doUpdateSet({ document: '{"exclusive_roles":[],"four_eyes_policy_activation":true}' })).execute();
      assert.deepEqual(await getSod(suite.svc.ts.store.db, suite.svc.projectId), { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: true });
      // Other pairs are the project's own: lifted, the grant is allowed and audited; put back, refused while held.
      const holder = await suite.svc.member(['APPROVER']);
      const both = [['ADMIN', 'POLICY_AUTHOR'], ['PERMIT_ISSUER', 'APPROVER']];
      assert.equal((await put({ exclusive_roles: both, four_eyes_policy_activation: true })).statusCode, 200);
      assert.equal((await post(`${suite.P}/members/${holder.principalId}/roles`, { role: 'PERMIT_ISSUER' })).json().code, 'sod_conflict');
      assert.equal((await put({ exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: true })).statusCode, 200);
      assert.equal((await post(`${suite.P}/members/${holder.principalId}/roles`, { role: 'PERMIT_ISSUER' })).statusCode, 200);
      const refused = await put({ exclusive_roles: both, four_eyes_policy_activation: true });
      assert.equal(refused.statusCode, 409);
      assert.equal(refused.json().code, 'sod_conflict');
      assert.equal(refused.json().conflicts[0].principal_id, holder.principalId);
      assert.equal((await post(`${suite.P}/members/${holder.principalId}/roles/PERMIT_ISSUER/revoke`, {})).statusCode, 200);
      const back = await put({ exclusive_roles: both, four_eyes_policy_activation: false });
      assert.equal(back.statusCode, 200);
      assert.deepEqual(back.json().document.exclusive_roles, [['ADMIN', 'POLICY_AUTHOR'], ['APPROVER', 'PERMIT_ISSUER']], 'pairs are normalized');
      // The stored document sent again (its pairs in another order) changes nothing: answered as stored, not audited.
      const again = await put({ four_eyes_policy_activation: false, exclusive_roles: [['APPROVER', 'PERMIT_ISSUER'], ['POLICY_AUTHOR', 'ADMIN']] });
      assert.equal(again.statusCode, 200, again.body);
      assert.deepEqual(again.json(), back.json());
      const audits = await suite.svc.ts.store.db.selectFrom('audit_events').select(['data']).where('kind', '=', 'sod.updated').execute();
      assert.equal(audits.length, 3);
      // The SELECT has no order (PostgreSQL returned them either way round): find the event by content.
      const restored = audits.map((a) => JSON.parse(a.data)).find((d) => d.after.four_eyes_policy_activation === false);
      assert.deepEqual(restored?.before, { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: true });
      assert.deepEqual(restored?.after, { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR'], ['APPROVER', 'PERMIT_ISSUER']], four_eyes_policy_activation: false });
      const bad = await put({ exclusive_roles: [['ADMIN', 'ADMIN'], ['ADMIN']], four_eyes_policy_activation: 'yes' });
      assert.equal(bad.statusCode, 400);
      assert.ok(bad.json().errors.length >= 2, 'every error at once');
    });

    test('SoD counts a live key an ADMIN minted for another as its own: a grant or a document that would pair it with a role held is refused', async () => {
      const adminKey = await suite.svc.keyHeader(['ADMIN']);
      const put = (doc: unknown) => suite.svc.app.inject({ method: 'PUT', url: `/v1/projects/${suite.svc.projectId}/sod`, headers: adminKey, payload: doc as object });
      const required = { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR']], four_eyes_policy_activation: false };
      const both = { exclusive_roles: [['ADMIN', 'POLICY_AUTHOR'], ['APPROVER', 'PERMIT_ISSUER']], four_eyes_policy_activation: false };
      assert.equal((await put(both)).statusCode, 200);
      const minter = await consoleMember(suite.svc, ['ADMIN']);
      const carol = await consoleMember(suite.svc, ['APPROVER']);
      const mint = async () => {
        const res = await post(`${suite.P}/api-keys`, { name: 'carol', roles: ['APPROVER'], principal_id: carol.principalId }, minter.post);
        assert.equal(res.statusCode, 201, res.body);
        return res.json().id as string;
      };
      const grant = () => post(`${suite.P}/members/${minter.principalId}/roles`, { role: 'PERMIT_ISSUER' });
      // The minter holds neither role, so the mint is allowed; it holds the APPROVER key's secret, so
      // PERMIT_ISSUER granted to it afterwards would pair the two the mint itself would have refused.
      let key = await mint();
      const refused = await grant();
      assert.equal(refused.statusCode, 409, refused.body);
      assert.equal(refused.json().code, 'sod_conflict');
      assert.match(refused.json().detail, /API key carrying APPROVER that it minted for another/);
      assert.deepEqual(await rolesOf(minter.principalId), ['ADMIN']);
      // The key revoked, the grant is allowed.
      assert.equal((await post(`${suite.P}/api-keys/${key}/revoke`, {})).statusCode, 200);
      assert.equal((await grant()).statusCode, 200);
      // The same pair made the other way round, by the document: refused while the key lives.
      assert.equal((await put(required)).statusCode, 200);
      key = await mint();
      const document = await put(both);
      assert.equal(document.statusCode, 409, document.body);
      assert.deepEqual(document.json().conflicts, [{ principal_id: minter.principalId, roles: ['APPROVER', 'PERMIT_ISSUER'] }]);
      assert.equal((await post(`${suite.P}/api-keys/${key}/revoke`, {})).statusCode, 200);
      assert.equal((await put(both)).statusCode, 200);
      assert.equal((await post(`${suite.P}/members/${minter.principalId}/roles/PERMIT_ISSUER/revoke`, {})).statusCode, 200);
    });

    test('a member without ADMIN mints keys for its own roles only: a key with no role is refused it, an ADMIN may mint one', async () => {
      const auditor = await consoleMember(suite.svc, ['AUDITOR']);
      const none = await suite.svc.app.inject({ method: 'POST', url: `${suite.P}/api-keys`, headers: auditor.post, payload: { name: 'no role', roles: [] } });
      assert.equal(none.statusCode, 422, none.body);
      assert.equal(none.json().code, 'roles_required');
      assert.equal((await suite.svc.app.inject({ method: 'POST', url: `${suite.P}/api-keys`, headers: auditor.post, payload: { name: 'mine', roles: ['AUDITOR'] } })).statusCode, 201);
      assert.equal((await post(`${suite.P}/api-keys`, { name: 'platform', roles: [] })).statusCode, 201, 'an ADMIN issues decision-only keys');
    });

    test('API key names are free text: any script and emoji are kept as given', async () => {
      for (const name of ['déploiement CI', '部署キー', 'ci 🚀 key', 'a']) {
        const r = await post(`${suite.P}/api-keys`, { name, roles: [] });
        assert.equal(r.statusCode, 201, `${name}: ${r.body}`);
        assert.equal(r.json().name, name);
      }
    });

    test('a self-registration, and a sign-in and sign-out of a person of no project, are audited in the installation\'s project', async () => {
      const events = async (kind: string, principalId: string) => (await suite.svc.ts.store.db.selectFrom('audit_events').select(['project_id', 'actor', 'data'])
        .where('kind', '=', kind).execute()).filter((e) => JSON.parse(e.data).principal_id === principalId);
      const reg = await suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', payload: { name: 'registrant-audited', password: 'a long enough passphrase' } });
      assert.equal(reg.statusCode, 201, reg.body);
      const id = reg.json().principal_id as string;
      const registered = await events('principal.registered', id);
      assert.equal(registered.length, 1);
      assert.equal(registered[0]!.project_id, suite.svc.projectId, 'the installation\'s project (bootstrap\'s)');
      assert.equal(registered[0]!.actor, id);
      assert.deepEqual(JSON.parse(registered[0]!.data), { principal_id: id, name: 'registrant-audited', kind: 'person' });
      const login = await suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', payload: { name: 'registrant-audited', password: 'a long enough passphrase' } });
      assert.equal(login.statusCode, 200, login.body);
      assert.equal((await events('session.started', id)).length, 1);
      const cookie = login.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
      const out = await suite.svc.app.inject({ method: 'POST', url: '/v1/console/logout', headers: { cookie, 'x-csrf-token': login.json().csrf_token, 'content-type': 'application/json' }, payload: '{}' });
      assert.ok(out.statusCode < 300, out.body);
      assert.equal((await events('session.ended', id)).length, 1);
    });

    test('a member revokes its own key (one it minted, or one an ADMIN minted for it), never another\'s', async () => {
      const auditor = await consoleMember(suite.svc, ['AUDITOR']);
      const mine = await post(`${suite.P}/api-keys`, { name: 'leaked', roles: ['AUDITOR'] }, auditor.post);
      assert.equal(mine.statusCode, 201, mine.body);
      const forMe = await post(`${suite.P}/api-keys`, { name: 'given', roles: ['AUDITOR'], principal_id: auditor.principalId });
      assert.equal(forMe.statusCode, 201, forMe.body);
      const others = await suite.svc.member(['AUDITOR']);
      const refused = await post(`${suite.P}/api-keys/${others.keyId}/revoke`, {}, auditor.post);
      assert.equal(refused.statusCode, 403, refused.body);
      assert.equal(refused.json().code, 'forbidden');
      const sod = (secret: string) => suite.svc.app.inject({ method: 'GET', url: `/v1/projects/${suite.svc.projectId}/sod`, headers: { authorization: `Bearer ${secret}` } });
      assert.equal((await sod(others.key)).statusCode, 200, 'another\'s key is untouched');
      for (const key of [mine.json(), forMe.json()]) {
        const r = await post(`${suite.P}/api-keys/${key.id}/revoke`, {}, auditor.post);
        assert.equal(r.statusCode, 200, r.body);
        assert.equal(r.json().changed, true);
        assert.equal((await sod(key.secret)).statusCode, 401, 'the next request with it is refused');
      }
      const events = await suite.svc.ts.store.db.selectFrom('audit_events').select(['actor', 'data']).where('kind', '=', 'api_key.revoked').execute();
      assert.ok(events.some((e) => e.actor === auditor.principalId && JSON.parse(e.data).key_id === mine.json().id), 'audited with the holder as actor');
    });

    test('API keys: ADMIN and AUDITOR list every key of the project, any other member the keys bound to itself', async () => {
      const approver = await consoleMember(suite.svc, ['APPROVER']);
      const issuer = await consoleMember(suite.svc, ['PERMIT_ISSUER']);
      const noRole = await consoleMember(suite.svc, []);
      const auditor = await consoleMember(suite.svc, ['AUDITOR']);
      const mine = [await post(`${suite.P}/api-keys`, { name: 'mine-1', roles: ['APPROVER'] }, approver.post), await post(`${suite.P}/api-keys`, { name: 'mine-2', roles: ['APPROVER'] }, approver.post)];
      const forMe = await post(`${suite.P}/api-keys`, { name: 'for-me', roles: ['APPROVER'], principal_id: approver.principalId });
      const theirs = await post(`${suite.P}/api-keys`, { name: 'theirs', roles: ['PERMIT_ISSUER'] }, issuer.post);
      for (const r of [...mine, forMe, theirs]) assert.equal(r.statusCode, 201, r.body);
      const ids = async (headers: Record<string, string>, query = '') => {
        const res = await suite.svc.app.inject({ method: 'GET', url: `${suite.P}/api-keys${query}`, headers });
        assert.equal(res.statusCode, 200, res.body);
        return res.json() as { api_keys: { id: string; principal_id: string; effective_roles: string[] }[]; next_cursor: string | null };
      };
      const own = await ids(approver.get);
      assert.deepEqual(own.api_keys.map((k) => k.id), [forMe, ...mine].map((r) => r.json().id).sort().reverse(), 'its own keys, newest first, the one an ADMIN minted for it included');
      assert.ok(own.api_keys.every((k) => k.principal_id === approver.principalId && k.effective_roles.includes('APPROVER')));
      // Paged like the full list: two pages of its own keys, nobody else's on either.
      const first = await ids(approver.get, '?limit=2');
      const second = await ids(approver.get, `?limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`);
      assert.deepEqual([...first.api_keys, ...second.api_keys].map((k) => k.id), own.api_keys.map((k) => k.id));
      assert.equal(second.next_cursor, null);
      assert.deepEqual((await ids(noRole.get)).api_keys, [], 'a member holding no key sees none');
      for (const reader of [auditor.get, suite.admin.get]) {
        const every = (await ids(reader, '?limit=500')).api_keys.map((k) => k.id);
        for (const r of [...mine, forMe, theirs]) assert.ok(every.includes(r.json().id), 'ADMIN and AUDITOR see every key');
      }
    });

    test('API keys: shown once, hashed, a subset of current roles, revocation is immediate, bad keys are 401', async () => {
      const holder = await suite.svc.member(['AUDITOR', 'APPROVER']);
      const minted = await post(`${suite.P}/api-keys`, { name: 'ci', roles: ['AUDITOR'], principal_id: holder.principalId });
      assert.equal(minted.statusCode, 201);
      const { secret, id } = minted.json();
      const list = await suite.svc.app.inject({ method: 'GET', url: `${suite.P}/api-keys`, headers: suite.admin.get });
      assert.ok(!list.body.includes(secret), 'the list never shows the secret');
      const stored = await suite.svc.ts.store.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.ok(!JSON.stringify(stored).includes(secret));
      const sod = (auth: string) => suite.svc.app.inject({ method: 'GET', url: `/v1/projects/${suite.svc.projectId}/sod`, headers: { authorization: auth } });
      assert.equal((await sod(`Bearer ${secret}`)).statusCode, 200);
      // A second instance on the same database sees the revocation on its very next request.
      const second = await checkedService(suite.svc.deps.config, { store: suite.svc.ts.store, logger: false });
      assert.equal((await post(`${suite.P}/api-keys/${id}/revoke`, {})).json().changed, true);
      assert.equal((await second.app.inject({ method: 'GET', url: `/v1/projects/${suite.svc.projectId}/sod`, headers: { authorization: `Bearer ${secret}` } })).statusCode, 401);
      await second.close();
      for (const auth of [`Bearer ${secret}`, 'Bearer gvl_short', `Bearer ${secret.slice(0, -1)}x`, `Basic ${secret}`, '']) {
        const res = await sod(auth);
        assert.equal(res.statusCode, 401, auth);
        assert.equal(res.json().code, 'unauthorized');
      }
      // A key's roles shrink with its holder's.
      const other = await post(`${suite.P}/api-keys`, { name: 'ci2', roles: ['AUDITOR'], principal_id: holder.principalId });
      assert.equal((await sod(`Bearer ${other.json().secret}`)).statusCode, 200);
      await post(`${suite.P}/members/${holder.principalId}/roles/AUDITOR/revoke`, {});
      assert.equal((await sod(`Bearer ${other.json().secret}`)).statusCode, 403);
    });

    test('machine route creates a service principal as a member with roles; SoD applies', async () => {
      const key = await suite.svc.keyHeader(['ADMIN']);
      const url = `/v1/projects/${suite.svc.projectId}/principals`;
      const ok = await suite.svc.app.inject({ method: 'POST', url, headers: key, payload: { kind: 'service', name: 'deploy-bot', roles: ['PERMIT_ISSUER'] } });
      assert.equal(ok.statusCode, 201);
      assert.deepEqual(ok.json().roles, ['PERMIT_ISSUER']);
      const sod = await suite.svc.app.inject({ method: 'POST', url, headers: key, payload: { kind: 'service', name: 'both-bot', roles: ['ADMIN', 'POLICY_AUTHOR'] } });
      assert.equal(sod.json().code, 'sod_conflict');
      assert.equal(await suite.svc.ts.store.db.selectFrom('principals').select('id').where('name', '=', 'both-bot').executeTakeFirst(), undefined, 'rolled back');
      const person = await suite.svc.app.inject({ method: 'POST', url, headers: key, payload: { kind: 'person', name: 'no-password' } });
      assert.equal(person.statusCode, 400);
      const svcPw = await suite.svc.app.inject({ method: 'POST', url, headers: key, payload: { kind: 'service', name: 'pw-bot', password: 'a long enough passphrase' } });
      assert.equal(svcPw.statusCode, 400);
      // Every error at once: the schema's (a name too long, an unknown member) beside the rules' (a weak password).
      const errorsOf = async (route: string, headers: Record<string, string>, payload: object) => {
        const res = await suite.svc.app.inject({ method: 'POST', url: route, headers, payload });
        assert.equal(res.statusCode, 400, res.body);
        return res.json().errors.map((e: { pointer: string; code: string }) => `${e.pointer} ${e.code}`).sort();
      };
      assert.deepEqual(await errorsOf(url, key, { kind: 'person', name: 'a'.repeat(129), password: 'short', extra: 1 }), ['/extra unknown_field', '/name too_long', '/password password_too_short']);
      assert.deepEqual(await errorsOf(url, key, { kind: 'person', name: 'x'.repeat(129) }), ['/name too_long', '/password required']);
      assert.deepEqual(await errorsOf(url, key, { kind: 'service', name: 'Bad Name', password: 'x'.repeat(2000) }), ['/name bad_format', '/password too_long']);
      assert.deepEqual(await errorsOf('/v1/console/register', {}, { name: 'a'.repeat(129), password: 'short' }), ['/name too_long', '/password password_too_short']);
      assert.deepEqual(await errorsOf('/v1/console/register', {}, { name: 5, password: 'aaaaaaaaaaaaaaaa' }), ['/name wrong_type', '/password password_too_weak']);
    });

    test('only a person\'s key creates a person: a service principal cannot make itself one and sign in as it (decision 0403)', async () => {
      const url = `/v1/projects/${suite.svc.projectId}/principals`;
      const payload = { kind: 'person', name: 'stand-in-resolver', password: 'a long enough passphrase', roles: ['ADMIN'] };
      const software = { authorization: `Bearer ${(await suite.svc.member(['ADMIN'], undefined, 'service')).key}` };
      const refused = await suite.svc.app.inject({ method: 'POST', url, headers: software, payload });
      assert.equal(refused.statusCode, 403, refused.body);
      assert.equal(refused.json().code, 'person_required');
      assert.equal(await suite.svc.ts.store.db.selectFrom('principals').select('id').where('name', '=', 'stand-in-resolver').executeTakeFirst(), undefined, 'nothing created');
      // A service may still create a service, and a person's key a person.
      assert.equal((await suite.svc.app.inject({ method: 'POST', url, headers: software, payload: { kind: 'service', name: 'helper-bot' } })).statusCode, 201);
      const person = { authorization: `Bearer ${(await suite.svc.member(['ADMIN'], undefined, 'person')).key}` };
      const made = await suite.svc.app.inject({ method: 'POST', url, headers: person, payload });
      assert.equal(made.statusCode, 201, made.body);
      assert.equal(made.json().kind, 'person');
    });

    test('login: same answer for unknown name and wrong password; throttled per account in the database', async () => {
      const m = await consoleMember(suite.svc, ['AUDITOR']);
      const attempt = (name: string, password: string, ip = '203.0.113.7') => suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: ip, payload: { name, password } });
      const unknown = await attempt('nobody-at-all', 'whatever password');
      const wrong = await attempt(m.name, 'whatever password');
      assert.equal(unknown.statusCode, 401);
      assert.equal(wrong.statusCode, 401);
      const strip = (b: any) => ({ ...b, request_id: undefined });
      assert.deepEqual(strip(unknown.json()), strip(wrong.json()));
      for (let i = 0; i < 4; i++) assert.equal((await attempt(m.name, 'still wrong')).statusCode, 401);
      const locked = await attempt(m.name, m.password);
      assert.equal(locked.statusCode, 429, 'even the right password waits while locked');
      assert.equal(locked.json().code, 'too_many_attempts');
      assert.match(String(locked.headers['retry-after']), /^[1-9]\d*$/);
      // Unknown names are throttled the same way (no difference to observe).
      for (let i = 0; i < 5; i++) await attempt('nobody-at-all', 'x');
      assert.equal((await attempt('nobody-at-all', 'x')).statusCode, 429);
      // Another instance on the same database sees the counter.
      const second = await checkedService(suite.svc.deps.config, { store: suite.svc.ts.store, logger: false });
      const there = await second.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: '198.51.100.1', payload: { name: m.name, password: m.password } });
      assert.equal(there.statusCode, 429);
      await second.close();
      // Once the lock has passed, the right password works and clears the account counter.
      suite.svc.deps.clock = { now: () => new Date(Date.now() + 16 * 60_000) };
      try {
        assert.equal((await attempt(m.name, m.password)).statusCode, 200);
        const row = await suite.svc.ts.store.db.selectFrom('login_throttle').selectAll().where('key', '=', `account:${m.name}`).executeTakeFirst();
        assert.equal(row, undefined);
      } finally { suite.svc.deps.clock = { now: () => new Date() }; }
    });

    test('a password is counted in characters at login as at registration: one of emoji past 128 signs in; past 256 never', async () => {
      const password = '😀😁😂🤣😃😄😅😆'.repeat(20); // 160 characters, 320 UTF-16 units
      const name = `emoji-${Date.now()}`;
      const post = (url: string, payload: object) => suite.svc.app.inject({ method: 'POST', url, remoteAddress: '203.0.113.61', payload });
      assert.equal((await post('/v1/console/register', { name, password })).statusCode, 201);
      const signedIn = await post('/v1/console/login', { name, password });
      assert.equal(signedIn.statusCode, 200, signedIn.body);
      // 257 characters is over the rule: never the password, whatever its first 256 are.
      assert.equal((await post('/v1/console/login', { name, password: password + password.slice(0, 194) })).statusCode, 401);
    });

    test('login: concurrent guesses are counted before any password is checked; a login that succeeds does not count', async () => {
      const m = await consoleMember(suite.svc, ['AUDITOR']);
      const attempt = (password: string, ip: string) => suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: ip, payload: { name: m.name, password } });
      // 40 at once, the right password among them: no more than the 5 attempts a lock allows are
      // checked, and whatever comes after them (the right password too, if it is late) waits.
      const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => attempt(i === 25 ? m.password : `wrong guess ${i}`, '203.0.113.40')));
      const checked = burst.filter((r) => r.statusCode !== 429);
      assert.ok(checked.length <= 5, `${checked.length} attempts were checked: ${burst.map((r) => r.statusCode).join(' ')}`);
      assert.ok(burst.filter((r) => r.statusCode === 429).length >= 35);
      // Successful logins give their attempt back: 60 in a row from one address never lock it.
      const n = await consoleMember(suite.svc, ['AUDITOR']);
      for (let i = 0; i < 60; i++) {
        const ok = await suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: '203.0.113.41', payload: { name: n.name, password: n.password } });
        assert.equal(ok.statusCode, 200, `login ${i}: ${ok.body}`);
      }
      // ...and leave the address's count where it was: a few wrong guesses from there are still only 401.
      for (let i = 0; i < 3; i++) {
        assert.equal((await suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: '203.0.113.41', payload: { name: `typo-${i}`, password: 'guess guess guess' } })).statusCode, 401);
      }
    });

    test('registration is throttled per address, taken names included: neither hashing nor probing for names is unlimited', async () => {
      const register = (ip: string, name = 'admin') => suite.svc.app.inject({ method: 'POST', url: '/v1/console/register', remoteAddress: ip, payload: { name, password: 'a long enough passphrase' } });
      for (let i = 0; i < 60; i++) assert.equal((await register('192.0.2.60')).statusCode, 409);
      const locked = await register('192.0.2.60');
      assert.equal(locked.statusCode, 429, locked.body);
      assert.equal(locked.json().code, 'too_many_attempts');
      assert.ok(Number(locked.headers['retry-after']) > 0);
      assert.equal((await register('192.0.2.60', 'fresh-name-60')).statusCode, 429, 'a free name too, from that address');
      assert.equal((await register('192.0.2.61')).statusCode, 409, 'another address is not held back');
      // An IPv6 client is its /64: a fresh address per attempt within it is the same client.
      for (let i = 1; i <= 60; i++) assert.equal((await register(`2001:db8:7:0::${i.toString(16)}`)).statusCode, 409);
      assert.equal((await register('2001:db8:7::ffff:1')).statusCode, 429, 'the rest of the /64 is held back');
      assert.equal((await register('2001:db8:8::1')).statusCode, 409, 'another /64 is not');
    });

    test('login throttles per address across accounts', async () => {
      const ip = '192.0.2.99';
      let last = 0;
      for (let i = 0; i < 50; i++) {
        last = (await suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: ip, payload: { name: `spray-${i}`, password: 'guess guess guess' } })).statusCode;
      }
      assert.equal(last, 401);
      const blocked = await suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: ip, payload: { name: 'spray-new', password: 'guess guess guess' } });
      assert.equal(blocked.statusCode, 429);
      // Once the lock has passed, a right password gives back its attempt, and the lock its count
      // set: the next right password from there is not locked out for twice as long.
      const m = await consoleMember(suite.svc, ['AUDITOR']);
      const saved = suite.svc.deps.clock;
      suite.svc.deps.clock = { now: () => new Date(Date.now() + 31_000) };
      try {
        for (let i = 0; i < 3; i++) {
          const ok = await suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: ip, payload: { name: m.name, password: m.password } });
          assert.equal(ok.statusCode, 200, `right password ${i + 1}: ${ok.body}`);
        }
        // A wrong one still meets the limit the spray reached.
        assert.equal((await suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: ip, payload: { name: 'spray-x', password: 'guess guess guess' } })).statusCode, 401);
        assert.equal((await suite.svc.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: ip, payload: { name: 'spray-y', password: 'guess guess guess' } })).statusCode, 429);
      } finally { suite.svc.deps.clock = saved; }
    });

    test('a member removed loses the keys it minted for others too: it holds their secrets', async () => {
      const admin = await suite.svc.member(['ADMIN'], undefined, 'person');
      const service = await suite.svc.member(['AUDITOR']);
      const other = await suite.svc.member(['AUDITOR']);
      const sod = (key: string) => suite.svc.app.inject({ method: 'GET', url: `/v1/projects/${suite.svc.projectId}/sod`, headers: { authorization: `Bearer ${key}` } });
      const minted = await suite.svc.ts.store.transaction((trx) => mintApiKey(trx, { projectId: suite.svc.projectId, principalId: service.principalId, name: 'by admin', roles: ['AUDITOR'], actor: admin.principalId }));
      const byOther = await suite.svc.ts.store.transaction((trx) => mintApiKey(trx, { projectId: suite.svc.projectId, principalId: service.principalId, name: 'by other', roles: ['AUDITOR'], actor: other.principalId }));
      assert.equal((await sod(minted.secret)).statusCode, 200);
      const removed = await revokeMember(suite.svc.ts.store, { projectId: suite.svc.projectId, principalId: admin.principalId, actor: 'test' }, new Date());
      assert.equal(removed.keys_revoked, 2, 'its own key and the one it minted for another');
      assert.equal((await sod(minted.secret)).statusCode, 401, 'the key whose secret it holds is revoked');
      assert.equal((await sod(byOther.secret)).statusCode, 200, 'keys others minted for the same principal stay');
      assert.equal((await sod(service.key)).statusCode, 200);
      // Demoted rather than removed: an ADMIN that loses ADMIN loses the keys it minted for others too.
      const demoted = await suite.svc.member(['ADMIN', 'AUDITOR'], undefined, 'person');
      const forService = await suite.svc.ts.store.transaction((trx) => mintApiKey(trx, { projectId: suite.svc.projectId, principalId: service.principalId, name: 'by demoted', roles: ['AUDITOR'], actor: demoted.principalId }));
      await revokeRole(suite.svc.ts.store, { projectId: suite.svc.projectId, principalId: demoted.principalId, role: 'AUDITOR', actor: 'test' }, new Date());
      assert.equal((await sod(forService.secret)).statusCode, 200, 'losing another role changes nothing');
      await revokeRole(suite.svc.ts.store, { projectId: suite.svc.projectId, principalId: demoted.principalId, role: 'ADMIN', actor: 'test' }, new Date());
      assert.equal((await sod(forService.secret)).statusCode, 401, 'losing ADMIN revokes what it minted for others');
    });

    test('a role revoked and granted again reaches keys minted after the new grant, not the old ones', async () => {
      const holder = await suite.svc.member(['AUDITOR']);
      const sod = (key: string) => suite.svc.app.inject({ method: 'GET', url: `/v1/projects/${suite.svc.projectId}/sod`, headers: { authorization: `Bearer ${key}` } });
      assert.equal((await sod(holder.key)).statusCode, 200);
      const input = { projectId: suite.svc.projectId, principalId: holder.principalId, role: 'AUDITOR' as const, actor: 'test' };
      await revokeRole(suite.svc.ts.store, input, new Date());
      assert.equal((await sod(holder.key)).statusCode, 403);
      await grantRole(suite.svc.ts.store, input, new Date());
      assert.equal((await sod(holder.key)).statusCode, 403, 'the old key stays without the role');
      const fresh = await suite.svc.ts.store.transaction((trx) => mintApiKey(trx, { projectId: suite.svc.projectId, principalId: holder.principalId, name: 'after', roles: ['AUDITOR'], actor: 'test' }));
      assert.equal((await sod(fresh.secret)).statusCode, 200, 'a key minted after the grant carries it');
      // A grant stamped by an instance whose clock runs ahead still reaches a key minted right after it.
      const ahead = await suite.svc.member([]);
      await grantRole(suite.svc.ts.store, { ...input, principalId: ahead.principalId }, new Date(Date.now() + 60_000));
      const minted = await suite.svc.ts.store.transaction((trx) => mintApiKey(trx, { projectId: suite.svc.projectId, principalId: ahead.principalId, name: 'skew', roles: ['AUDITOR'], actor: 'test' }));
      assert.equal((await sod(minted.secret)).statusCode, 200, 'the key is never older than the grants of its roles');
    });

    test('the console lists what each key can do now: a role revoked, or revoked and granted again, is not among its effective roles', async () => {
      const holder = await suite.svc.member(['AUDITOR', 'APPROVER']);
      const listed = async () => {
        const res = await suite.svc.app.inject({ method: 'GET', url: `${suite.P}/api-keys?limit=500`, headers: suite.admin.get });
        assert.equal(res.statusCode, 200);
        return res.json().api_keys.find((k: { id: string }) => k.id === holder.keyId);
      };
      const sod = async () => (await suite.svc.app.inject({ method: 'GET', url: `/v1/projects/${suite.svc.projectId}/sod`, headers: { authorization: `Bearer ${holder.key}` } })).statusCode;
      assert.deepEqual((await listed()).effective_roles, ['APPROVER', 'AUDITOR']);
      const input = { projectId: suite.svc.projectId, principalId: holder.principalId, role: 'AUDITOR' as const, actor: 'test' };
      await revokeRole(suite.svc.ts.store, input, new Date());
      await new Promise((r) => setTimeout(r, 5));
      await grantRole(suite.svc.ts.store, input, new Date());
      assert.equal(await sod(), 403, 'the machine plane: the key no longer carries AUDITOR');
      const key = await listed();
      assert.deepEqual(key.roles, ['APPROVER', 'AUDITOR'], 'the roles it was minted with');
      assert.deepEqual(key.effective_roles, ['APPROVER'], 'the console says what the machine plane does');
      const revoked = await post(`${suite.P}/api-keys/${holder.keyId}/revoke`, {});
      assert.equal(revoked.statusCode, 200);
      assert.deepEqual(revoked.json().api_key.effective_roles, [], 'a revoked key carries nothing');
    });

    test('behind a trusted proxy the address is the client X-Forwarded-For names; from any other peer the header is ignored', async () => {
      const proxied = await startService(backend, { trustProxy: ['192.0.2.1'] });
      try {
        const login = (client: string, peer = '192.0.2.1', i = 0) => proxied.app.inject({ method: 'POST', url: '/v1/console/login', remoteAddress: peer,
          headers: { 'x-forwarded-for': client }, payload: { name: `spray-${client}-${i}`, password: 'guess guess guess' } });
        for (let i = 0; i < 50; i++) assert.equal((await login('198.51.100.7', '192.0.2.1', i)).statusCode, 401);
        assert.equal((await login('198.51.100.7', '192.0.2.1', 50)).statusCode, 429, 'the client behind the proxy is locked');
        // Other spellings of the same address (a port a proxy appended, the IPv4-mapped form) are the same client.
        for (const spelled of ['198.51.100.7:1234', '::ffff:198.51.100.7', '[::ffff:198.51.100.7]:80']) {
          assert.equal((await login(spelled, '192.0.2.1', 51)).statusCode, 429, spelled);
        }
        assert.equal((await login('198.51.100.8')).statusCode, 401, 'another client behind the same proxy is not');
        // A peer that is not a listed proxy cannot pick its address with the header.
        for (let i = 0; i < 50; i++) assert.equal((await login(`198.51.100.${100 + i}`, '203.0.113.9', i)).statusCode, 401);
        assert.equal((await login('198.51.100.200', '203.0.113.9', 99)).statusCode, 429);
      } finally { await proxied.stop(); }
    });
  });
}
