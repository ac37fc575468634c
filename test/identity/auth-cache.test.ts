// SQLite caches an API key's context, and a project's active-policy pointer, while the read epoch
// (migration 0900, bumped by triggers) is unchanged. Whoever changes what they rest on (this
// service, or another connection to the same file, a shell or another process), the next request
// must see it. PostgreSQL decisions use the same caches unvalidated and check both at commit
// (services/authorize/recheck.ts); there a second pool stands for another instance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import BetterSqlite3 from 'better-sqlite3';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, delegate, issue, newAgent } from '../support/authorize.ts';
import { recordedDecisions } from '../support/decisions.ts';
import { CompiledQuery } from 'kysely';
import { hashSecret } from '../../src/http/auth/api-key.ts';
import type { Store } from '../../src/store/store.ts';

const sqlite = backends().find((b) => b.name === 'sqlite')!;
const postgres = backends().find((b) => b.name === 'postgres');

test('API key and policy pointer caches (SQLite): changes made on another connection take effect on the next request', async () => {
  const svc = await startService(sqlite);
  const file = svc.ts.store.file!;
  const other = new BetterSqlite3(file);
  other.pragma('busy_timeout = 5000');
  try {
    const holder = await svc.member(['AUDITOR']);
    const sod = (key: string) => svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/sod`, headers: { authorization: `Bearer ${key}` } });
    const epoch = () => Number((other.prepare('select n from read_epoch where id = 1').get() as { n: number }).n);
    const sql = (text: string, ...params: unknown[]) => { const before = epoch(); other.prepare(text).run(...params); assert.ok(epoch() > before, `${text} bumps the epoch`); };
    assert.equal((await sod(holder.key)).statusCode, 200);
    assert.equal((await sod(holder.key)).statusCode, 200, 'served from the cache');

    // Each change, made outside the service, denies the very next request; undoing it restores.
    const changes: [string, string, unknown[], unknown[]][] = [
      ['key revoked', 'update api_keys set revoked_at = ? where id = ?', ['2026-01-01T00:00:00Z', holder.keyId], [null, holder.keyId]],
      ['principal disabled', 'update principals set disabled_at = ? where id = ?', ['2026-01-01T00:00:00Z', holder.principalId], [null, holder.principalId]],
      ['membership revoked', 'update memberships set revoked_at = ? where principal_id = ?', ['2026-01-01T00:00:00Z', holder.principalId], [null, holder.principalId]],
    ];
    for (const [what, text, set, unset] of changes) {
      sql(text, ...set);
      assert.equal((await sod(holder.key)).statusCode, 401, what);
      sql(text, ...unset);
      assert.equal((await sod(holder.key)).statusCode, 200, `${what}, undone`);
    }
    // Roles: deleting the grant leaves the key without the role it needs (403), re-granting restores.
    sql('delete from role_grants where principal_id = ?', holder.principalId);
    assert.equal((await sod(holder.key)).statusCode, 403, 'role grant deleted');
    sql(`insert into role_grants (project_id, principal_id, role, granted_at, granted_by) values (?, ?, 'AUDITOR', '2026-01-01T00:00:00Z', null)`, svc.projectId, holder.principalId);
    assert.equal((await sod(holder.key)).statusCode, 200, 'role granted again');

    // The active-policy pointer: moved back to an earlier version on the other connection, the
    // very next decision is made under that version.
    const first = await activatePolicy(svc, ALLOW_PAYMENTS);
    const second = await activatePolicy(svc, { ...ALLOW_PAYMENTS, rules: ALLOW_PAYMENTS.rules.slice(1) });
    const agent = newAgent();
    const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
    const caller = await svc.keyHeader([]);
    const decide = async () => (await svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: caller,
      payload: { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } } })).json().policy_version;
    assert.equal(await decide(), second);
    assert.equal(await decide(), second, 'served from the cache');
    sql('update policy_active set version = ?, hash = (select hash from policy_versions where project_id = ? and version = ?) where project_id = ?', first, svc.projectId, first, svc.projectId);
    assert.equal(await decide(), first, 'the pointer moved on another connection');
    sql('delete from policy_active where project_id = ?', svc.projectId);
    assert.equal(await decide(), null, 'no active policy any more');

    // A decision takes the key's cached context without reading the epoch; its transaction checks
    // the epoch before writing (store/read-epoch.ts). A key revoked meanwhile gets 401, whatever
    // its body, and nothing is recorded.
    const decisionsBefore = (await recordedDecisions(svc.ts.store.db)).length;
    const callerKey = caller.authorization;
    const payload = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } };
    const raw = (body: unknown) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { authorization: callerKey }, payload: body as object });
    assert.equal((await raw(payload)).statusCode, 200, 'the key is cached');
    const callerId = (other.prepare('select id from api_keys where secret_hash = ?').get(hashSecret(callerKey.slice('Bearer '.length))) as { id: string }).id;
    sql('update api_keys set revoked_at = ? where id = ?', '2026-01-01T00:00:00Z', callerId);
    const denied = await raw(payload);
    assert.equal(denied.statusCode, 401, denied.body);
    assert.equal(denied.json().code, 'unauthorized');
    assert.equal((await raw({ ...payload, amount: { minor: -1, currency: 'EUR' } })).statusCode, 401, 'a bad body does not get past a revoked key');
    assert.equal((await recordedDecisions(svc.ts.store.db)).length, decisionsBefore + 1, 'only the decision made before the revocation was recorded');
    sql('update api_keys set revoked_at = null where id = ?', callerId);
    assert.equal((await raw(payload)).statusCode, 200, 'revocation undone');

    sql('delete from api_keys where id = ?', holder.keyId);
    assert.equal((await sod(holder.key)).statusCode, 401, 'key deleted');
  } finally {
    other.close();
    await svc.stop();
  }
});

test('decision caches (PostgreSQL): a change made by another instance takes effect on the next decision', { skip: postgres ? false : 'PostgreSQL not configured' }, async () => {
  const svc = await startService(postgres!);
  const other = svc.ts.reopen();
  try {
    const first = await activatePolicy(svc, ALLOW_PAYMENTS);
    const second = await activatePolicy(svc, { ...ALLOW_PAYMENTS, rules: ALLOW_PAYMENTS.rules.slice(1) });
    const agent = newAgent();
    const { jws } = await issue(svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'] });
    const holder = await svc.member([]);
    const payload = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } };
    const decide = (body: unknown = payload) => svc.app.inject({ method: 'POST', url: '/v1/authorize', headers: { authorization: `Bearer ${holder.key}` }, payload: body as object });
    const sql = (text: string, ...params: unknown[]) => sql_(other, text, params);
    const decisions = async () => (await recordedDecisions(svc.ts.store.db)).length;

    assert.equal((await decide()).json().policy_version, second);
    assert.equal((await decide()).json().policy_version, second, 'key context and pointer served from the caches');

    // Each change to what the key rests on, made by the other instance, refuses the very next
    // decision with 401 whatever its body, and records nothing; undoing it restores.
    const changes: [string, string, unknown[], unknown[]][] = [
      ['key revoked', 'update api_keys set revoked_at = $1 where id = $2', ['2026-01-01T00:00:00Z', holder.keyId], [null, holder.keyId]],
      ['principal disabled', 'update principals set disabled_at = $1 where id = $2', ['2026-01-01T00:00:00Z', holder.principalId], [null, holder.principalId]],
      ['membership revoked', 'update memberships set revoked_at = $1 where principal_id = $2', ['2026-01-01T00:00:00Z', holder.principalId], [null, holder.principalId]],
    ];
    for (const [what, text, set, unset] of changes) {
      assert.equal((await decide()).statusCode, 200, `${what}: cached first`);
      const before = await decisions();
      await sql(text, ...set);
      // A bad body first, while the key's context is still cached: it is checked afresh all the same.
      assert.equal((await decide({ ...payload, amount: { minor: -1, currency: 'EUR' } })).statusCode, 401, `${what}: a bad body does not get past it`);
      const denied = await decide();
      assert.equal(denied.statusCode, 401, `${what}: ${denied.body}`);
      assert.equal(denied.json().code, 'unauthorized');
      assert.equal(await decisions(), before, `${what}: nothing recorded`);
      await sql(text, ...unset);
      assert.equal((await decide()).statusCode, 200, `${what}, undone`);
    }

    // An agent the project has never seen has no row to lock (a delegate: the parent agent signed
    // its permit itself): its first decision checks the key in a statement of its own, before the
    // agent is created.
    const fresh = newAgent();
    const freshBody = { ...payload, agent: fresh.did, permit: await delegate(jws, agent, fresh.did, { actions: ['pay'], resources: ['resource://shop/*'] }) };
    assert.equal((await other.db.selectFrom('agents').select('did').where('did', '=', fresh.did).execute()).length, 0, 'the delegate has no row yet');
    assert.equal((await decide()).statusCode, 200, 'the key is cached');
    await sql('update api_keys set revoked_at = $1 where id = $2', '2026-01-01T00:00:00Z', holder.keyId);
    assert.equal((await decide(freshBody)).statusCode, 401, 'a new agent, a revoked key');
    assert.equal((await other.db.selectFrom('agents').select('did').where('did', '=', fresh.did).execute()).length, 0, 'no agent row was created');
    await sql('update api_keys set revoked_at = null where id = $1', holder.keyId);
    assert.equal((await decide()).statusCode, 200, 'cached again');
    const created = await decide(freshBody);
    assert.equal(created.statusCode, 200, created.body);
    assert.ok((await recordedDecisions(svc.ts.store.db)).some((d) => d.agent === fresh.did), 'and its decision is recorded');

    // The active-policy pointer, moved back by the other instance: the very next decision is made
    // under that version; deleted, under none.
    await sql('update policy_active set version = $1, hash = (select hash from policy_versions where project_id = $2 and version = $1) where project_id = $2', first, svc.projectId);
    assert.equal((await decide()).json().policy_version, first, 'the pointer moved on another instance');
    assert.equal((await decide()).json().policy_version, first, 'and the cache holds the new pointer');
    await sql('delete from policy_active where project_id = $1', svc.projectId);
    const none = (await decide()).json();
    assert.equal(none.policy_version, null, 'no active policy any more');
    assert.equal(none.decision, 'DENY');
  } finally {
    await other.close();
    await svc.stop();
  }
});

function sql_(store: Store, text: string, params: unknown[]): Promise<unknown> {
  return store.db.executeQuery(CompiledQuery.raw(text, params));
}
