// Acts that hand out authority outside the roles and memberships (a permit issued, an agent
// released, an UNKNOWN execution resolved) are made under the project's roles lock, their actor's
// role read again under it, as ADMIN's acts are (roles-lock-race.test.ts): one demoted or removed
// meanwhile must leave the act committed before that change (the audit log says so) or refused as
// it would be after it. Each race stops the act at its first write (the test holds the table in
// EXCLUSIVE mode from a session of its own: reads go on, writes and a LOCK TABLE wait), sends the
// loss through a second instance, then lets both go. Without the lock the loss commits and answers
// while the act still waits, and the act then commits: a permit issued, an agent let go, or an
// execution settled, by one who no longer could.
// Recording an approval is checked the same way, though it holds the approver's rows FOR SHARE
// instead of the roles lock (the signature, not the relaying key's role, is its credential).
// On SQLite one writer runs each transaction whole, so the two run one after the other, in both
// orders, and with the loss between the act's authentication and its handler, under the same check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../support/backends.ts';
import { newAgent } from '../support/authorize.ts';
import { consoleMember } from '../support/console.ts';
import { seedInFlight } from '../support/executions.ts';
import { newApprover, seedObligation } from '../support/approvals.ts';
import { raceSuites, type Answer, type App } from '../support/interleave.ts';
import { startService, type TestService } from '../support/service.ts';

interface Race {
  title: string;
  /** The table the act writes first, and a LIKE pattern of that write; the act's audit event. */
  table: string;
  write: string;
  kind: string;
  /** The statuses of a refusal, once the role is gone (401 or 403 unless said). */
  refused?: number[];
  prepare(svc: TestService, P: string): Promise<{ act(app: App): Promise<Answer>; lose(app: App): Promise<Answer>; actor: string; lossKind: string }>;
}

const post = (app: App, url: string, headers: Record<string, string>, payload: unknown) => app.inject({ method: 'POST', url, headers, payload: JSON.stringify(payload) });

/** A frozen agent, and an ADMIN in the console to take roles away. */
async function frozenAgent(svc: TestService, P: string) {
  const admin = await consoleMember(svc, ['ADMIN']);
  const agent = newAgent().did;
  const frozen = await post(svc.app, `${P}/agents/freeze`, admin.post, { agent });
  assert.equal(frozen.statusCode, 200, frozen.body);
  return { admin, agent };
}

/** An execution recovery marked UNKNOWN: what waits for a person to resolve it. */
async function unknownExecution(svc: TestService): Promise<string> {
  const id = await seedInFlight(svc.ts.store, svc.projectId);
  await svc.ts.store.db.updateTable('executions').set({ status: 'UNKNOWN', note: 'the process making this call stopped mid-call' }).where('id', '=', id).execute();
  return id;
}

const RACES: Race[] = [
  ...(['demoted', 'removed'] as const).map((how): Race => ({
    title: `a PERMIT_ISSUER ${how} while it issues a permit issues nothing after that`,
    table: 'permits',
    write: 'insert into "permits"%',
    kind: 'permit.issued',
    async prepare(svc, P) {
      const admin = await consoleMember(svc, ['ADMIN']);
      const issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
      const permit = { agent: newAgent().did, actions: ['pay'], resources: ['resource://shop/*'], expires_at: new Date(Date.now() + 3_600_000).toISOString() };
      const loss = how === 'demoted' ? `${P}/members/${issuer.principalId}/roles/PERMIT_ISSUER/revoke` : `${P}/members/${issuer.principalId}/revoke`;
      return {
        act: (app) => post(app, `${P}/permits`, issuer.post, permit),
        lose: (app) => post(app, loss, admin.post, {}),
        actor: issuer.principalId, lossKind: how === 'demoted' ? 'role.revoked' : 'member.revoked',
      };
    },
  })),
  // Resolving an UNKNOWN is a statement the first of which stands for good (invariant 7), so one
  // made by an ADMIN demoted or removed meanwhile could not be undone by those who remain.
  ...(['demoted', 'removed'] as const).map((how): Race => ({
    title: `an ADMIN ${how} while it resolves an UNKNOWN execution in the console settles nothing after that`,
    table: 'executions',
    write: 'update "executions"%',
    kind: 'execution.resolved',
    async prepare(svc, P) {
      const admin = await consoleMember(svc, ['ADMIN']);
      const resolver = await consoleMember(svc, ['ADMIN']);
      const id = await unknownExecution(svc);
      const loss = how === 'demoted' ? `${P}/members/${resolver.principalId}/roles/ADMIN/revoke` : `${P}/members/${resolver.principalId}/revoke`;
      return {
        act: (app) => post(app, `${P}/executions/${id}/resolve`, resolver.post, { outcome: 'FAILED', note: 'no charge in the ledger' }),
        lose: (app) => post(app, loss, admin.post, {}),
        actor: resolver.principalId, lossKind: how === 'demoted' ? 'role.revoked' : 'member.revoked',
      };
    },
  })),
  {
    title: 'a person\'s ADMIN key whose holder is demoted while it resolves an UNKNOWN execution settles nothing after that',
    table: 'executions',
    write: 'update "executions"%',
    kind: 'execution.resolved',
    async prepare(svc, P) {
      const admin = await consoleMember(svc, ['ADMIN']);
      const holder = await svc.member(['ADMIN'], undefined, 'person');
      const id = await unknownExecution(svc);
      const key = { authorization: `Bearer ${holder.key}`, 'content-type': 'application/json' };
      return {
        act: (app) => post(app, `/v1/projects/${svc.projectId}/executions/resolve`, key, { execution_id: id, outcome: 'SUCCEEDED', note: 'the charge is in the ledger' }),
        lose: (app) => post(app, `${P}/members/${holder.principalId}/roles/ADMIN/revoke`, admin.post, {}),
        actor: holder.keyId, lossKind: 'role.revoked',
      };
    },
  },
  // Recording an approval needs no role of its relaying key (decision 0502): the credential is the
  // approver's signature, and the approver's key, membership and grant are read FOR SHARE in its
  // transaction (approvals/eligibility.ts) instead of under the roles lock. The same check holds.
  ...(['demoted', 'removed'] as const).map((how): Race => ({
    title: `an APPROVER ${how} while its approval is recorded approves nothing after that`,
    table: 'approval_requests',
    write: 'update "approval_requests"%',
    kind: 'approval.recorded',
    refused: [422],
    async prepare(svc, P) {
      const admin = await consoleMember(svc, ['ADMIN']);
      const approver = await newApprover(svc);
      const relay = await svc.member([]);
      const key = { authorization: `Bearer ${relay.key}`, 'content-type': 'application/json' };
      const id = await seedObligation(svc);
      const listed = await svc.app.inject({ method: 'GET', url: `/v1/projects/${svc.projectId}/approvals?limit=500`, headers: key });
      const { statement } = listed.json().approvals.find((o: { id: string }) => o.id === id);
      const loss = how === 'demoted' ? `${P}/members/${approver.principalId}/roles/APPROVER/revoke` : `${P}/members/${approver.principalId}/revoke`;
      return {
        act: (app) => post(app, `/v1/projects/${svc.projectId}/approvals`, key, { approval_request_id: id, key_id: approver.keyId, signature: approver.sign(statement) }),
        lose: (app) => post(app, loss, admin.post, {}),
        actor: relay.keyId, lossKind: how === 'demoted' ? 'role.revoked' : 'member.revoked',
      };
    },
  })),
  {
    title: 'a PERMIT_ISSUER demoted while it releases an agent in the console releases nothing after that',
    table: 'agents',
    write: 'lock table agents%',
    kind: 'agent.released',
    async prepare(svc, P) {
      const { admin, agent } = await frozenAgent(svc, P);
      const issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
      return {
        act: (app) => post(app, `${P}/agents/release`, issuer.post, { agent }),
        lose: (app) => post(app, `${P}/members/${issuer.principalId}/roles/PERMIT_ISSUER/revoke`, admin.post, {}),
        actor: issuer.principalId, lossKind: 'role.revoked',
      };
    },
  },
  {
    title: 'a PERMIT_ISSUER key whose holder is demoted while it releases an agent releases nothing after that',
    table: 'agents',
    write: 'lock table agents%',
    kind: 'agent.released',
    async prepare(svc, P) {
      const { admin, agent } = await frozenAgent(svc, P);
      const holder = await svc.member(['PERMIT_ISSUER']);
      const key = { authorization: `Bearer ${holder.key}`, 'content-type': 'application/json' };
      return {
        act: (app) => post(app, `/v1/projects/${svc.projectId}/agents/release`, key, { agent }),
        lose: (app) => post(app, `${P}/members/${holder.principalId}/roles/PERMIT_ISSUER/revoke`, admin.post, {}),
        actor: holder.keyId, lossKind: 'role.revoked',
      };
    },
  },
];

async function check(svc: TestService, race: Race, r: { actor: string; lossKind: string }, acted: Answer, lost: Answer): Promise<void> {
  assert.equal(lost.statusCode, 200, lost.body);
  const events = await svc.ts.store.db.selectFrom('audit_events').select(['kind', 'actor']).where('project_id', '=', svc.projectId).orderBy('seq').execute();
  const loss = events.findIndex((e) => e.kind === r.lossKind);
  const act = events.findIndex((e) => e.kind === race.kind && e.actor === r.actor);
  assert.ok(loss >= 0);
  if (acted.statusCode === 200 || acted.statusCode === 201) {
    assert.ok(act >= 0 && act < loss, `${race.kind} at ${act} of the audit log, ${r.lossKind} at ${loss}`);
  } else {
    // 403 once the role is gone; 401 for a person whose removal (which ends its sessions) came first.
    assert.ok((race.refused ?? [401, 403]).includes(acted.statusCode), acted.body);
    assert.equal(act, -1, 'a refused act wrote nothing');
  }
}

raceSuites('acts that hand out authority re-read their actor\'s standing in their transaction', RACES.map((r) => ({ ...r, betweenAuthentication: true })), async (svc, race, race2) => {
  const r = await race.prepare(svc, `/v1/console/projects/${svc.projectId}`);
  const [acted, lost] = await race2(race.table, race.write, r.act, r.lose);
  await check(svc, race, r, acted, lost);
});

for (const backend of backends()) {
  test(`the role read again under the lock is any one of those the act takes, beside others held (${backend.name})`, async () => {
    const svc = await startService(backend);
    try {
      const P = `/v1/console/projects/${svc.projectId}`;
      const issuer = await consoleMember(svc, ['PERMIT_ISSUER', 'AUDITOR']);
      const permit = { agent: newAgent().did, actions: ['pay'], resources: ['resource://shop/*'], expires_at: new Date(Date.now() + 3_600_000).toISOString() };
      const issued = await post(svc.app, `${P}/permits`, issuer.post, permit);
      assert.equal(issued.statusCode, 201, issued.body);
      const { agent } = await frozenAgent(svc, P);
      const released = await post(svc.app, `${P}/agents/release`, issuer.post, { agent });
      assert.equal(released.statusCode, 200, released.body);
      // A key of a PERMIT_ISSUER, not ADMIN, releases on the machine plane.
      const again = await post(svc.app, `${P}/agents/freeze`, (await consoleMember(svc, ['ADMIN'])).post, { agent });
      assert.equal(again.statusCode, 200, again.body);
      const holder = await svc.member(['PERMIT_ISSUER', 'AUDITOR']);
      const key = { authorization: `Bearer ${holder.key}`, 'content-type': 'application/json' };
      const byKey = await post(svc.app, `/v1/projects/${svc.projectId}/agents/release`, key, { agent });
      assert.equal(byKey.statusCode, 200, byKey.body);
    } finally { await svc.stop(); }
  });
}
