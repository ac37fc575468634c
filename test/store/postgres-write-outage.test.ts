// Every write route whose connection drops mid-transaction (here: at its audit event, the change
// itself already made) answers 503 database_unavailable, keeps nothing (neither the event nor the
// change), and succeeds when asked again: the pool is not poisoned.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService } from '../support/service.ts';
import { relayed } from '../support/tcp-proxy.ts';
import { cutAt } from '../support/hold-table.ts';
import { consoleMember } from '../support/console.ts';
import { ALLOW_PAYMENTS, issue, newAgent } from '../support/authorize.ts';
import { newApprover, seedObligation } from '../support/approvals.ts';
import { seedInFlight } from '../support/executions.ts';

const postgres = backends().find((b) => b.name === 'postgres');

test('a write cut off at its audit event is 503, keeps nothing, and goes through when retried', { skip: !postgres && 'PostgreSQL not configured' }, async () => {
  const r = relayed(postgres!);
  const svc = await startService(r.backend);
  // What a write may change, as one text: every table but those that change beside it (a session's
  // last use, a counted sign-in attempt, heartbeats, the log's tree and checkpoints, settings).
  const BESIDE = ['sessions', 'login_throttle', 'execution_instances', 'audit_log_state', 'audit_nodes', 'audit_checkpoints', 'audit_witness_problem', 'signer_keys', 'settings'];
  const contents = async () => {
    const db = svc.ts.store.db;
    const tables = (await sql<{ t: string }>`select table_name as t from information_schema.tables where table_schema = current_schema()
      and table_type = 'BASE TABLE' and table_name not like 'kysely%' order by 1`.execute(db)).rows.map((r) => r.t).filter((t) => !BESIDE.includes(t));
    // Events by id: the sequencer gives earlier ones their leaf indexes meanwhile.
    const row = (t: string) => (t === 'audit_events' ? sql`x.id` : sql`x::text`);
    const parts = await Promise.all(tables.map(async (t) => `${t}:${(await sql<{ h: string | null }>`select md5(string_agg(${row(t)}, ',' order by ${row(t)})) as h from ${sql.table(t)} x`.execute(db)).rows[0]!.h}`));
    return parts.join(' ');
  };
  try {
    const P = `/v1/projects/${svc.projectId}`;
    const C = `/v1/console/projects/${svc.projectId}`;
    const admin = await consoleMember(svc, ['ADMIN', 'PERMIT_ISSUER']);
    const author = await svc.keyHeader(['POLICY_AUTHOR']);
    const anyKey = await svc.keyHeader([]);
    const member = await svc.member(['AUDITOR']);
    const agent = newAgent().did;
    const permit = await issue(svc, agent, { actions: ['read'], resources: ['resource://docs/*'] });
    const saved = await svc.app.inject({ method: 'PUT', url: `${P}/policy`, headers: author, payload: { policy: ALLOW_PAYMENTS, note: 'x' } });
    const approver = await newApprover(svc);
    const obligation = await seedObligation(svc);
    const statement = (await svc.app.inject({ method: 'GET', url: `${P}/approvals?limit=500`, headers: anyKey })).json().approvals.find((o: { id: string }) => o.id === obligation).statement;
    const execution = await seedInFlight(svc.ts.store, svc.projectId);
    await svc.ts.store.db.updateTable('executions').set({ status: 'UNKNOWN' }).where('id', '=', execution).execute();
    const person = { authorization: `Bearer ${(await svc.member(['ADMIN'], undefined, 'person')).key}` };
    const writes: [string, string, string, Record<string, string>, unknown][] = [
      ['grant a role', 'POST', `${C}/members/${member.principalId}/roles`, admin.post, { role: 'APPROVER' }],
      ['revoke a role', 'POST', `${C}/members/${member.principalId}/roles/APPROVER/revoke`, admin.post, {}],
      ['mint a key', 'POST', `${C}/api-keys`, admin.post, { name: 'k', roles: ['AUDITOR'], principal_id: member.principalId }],
      ['revoke a key', 'POST', `${C}/api-keys/${member.keyId}/revoke`, admin.post, {}],
      ['register an agent', 'POST', `${C}/agents`, admin.post, { did: agent }],
      ['freeze', 'POST', `${C}/agents/freeze`, admin.post, { agent }],
      ['release', 'POST', `${C}/agents/release`, admin.post, { agent }],
      ['issue a permit', 'POST', `${C}/permits`, admin.post, { agent, actions: ['read'], resources: ['resource://docs/*'], expires_at: new Date(Date.now() + 3_600_000).toISOString() }],
      ['revoke a permit', 'POST', `${C}/permits/${permit.commitment}/revoke`, admin.post, {}],
      ['save a policy', 'PUT', `${P}/policy`, author, { policy: ALLOW_PAYMENTS, note: 'y' }],
      ['activate it', 'POST', `${P}/policy/activate`, author, { version: saved.json().version }],
      ['approve', 'POST', `${P}/approvals`, anyKey, { approval_request_id: obligation, key_id: approver.keyId, signature: approver.sign(statement) }],
      ['withdraw', 'POST', `${P}/approvals/revoke`, { authorization: `Bearer ${approver.key}` }, { approval_request_id: obligation }],
      ['resolve an execution', 'POST', `${P}/executions/resolve`, person, { execution_id: execution, outcome: 'FAILED', note: 'looked' }],
      ['remove a member', 'POST', `${C}/members/${member.principalId}/revoke`, admin.post, {}],
      ['sign in', 'POST', '/v1/console/login', {}, { name: admin.name, password: admin.password }],
      ['sign out', 'POST', '/v1/console/logout', admin.post, {}],
    ];
    for (const [what, method, url, headers, payload] of writes) {
      const send = () => svc.app.inject({ method: method as 'POST', url, headers, payload: payload as object });
      const before = await contents();
      const res = await cutAt(r.relay(), (svc.ts.options as { schema: string }).schema, 'audit_events', 'insert into audit_events%', send);
      assert.deepEqual([res.statusCode, res.json().code], [503, 'database_unavailable'], `${what}: ${res.body}`);
      assert.equal(await contents(), before, `${what}: something of it was kept`);
      const again = await send();
      assert.ok(again.statusCode < 300, `${what} retried: ${again.statusCode} ${again.body}`);
    }
  } finally { r.relay().restore(); await svc.stop(); }
});
