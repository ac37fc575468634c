// Issue 5 across instances, two Gavel processes on one PostgreSQL schema: a permit revoked through
// one is refused by the other on its next decision, with everything delegated from it, though that
// one has it verified and cached; a use count spent through one is spent for the other; and a
// revocation never lets a decision in flight record an ALLOW after the revocation has committed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../support/backends.ts';
import { startService, type TestService } from '../support/service.ts';
import { activatePolicy, ALLOW_PAYMENTS, delegate, issue, newAgent, type Agent } from '../support/authorize.ts';
import { consoleMember } from '../support/console.ts';
import { databaseUrl, spawnGavel, type GavelProcess } from '../support/process.ts';
import { holdRowsWhere, type HeldTable } from '../support/hold-table.ts';
import { presentedCommitment } from '../../src/domain/permit/index.ts';

const pg = backends().find((b) => b.name === 'postgres');
const skip = !pg && 'PostgreSQL not configured';
const READ = { actions: ['read'], resources: ['resource://docs/*'] };

interface Decided { decision: string; reason_code: string; detail?: string; audit_id: string }
type Payload = { agent: string; permit: string; action: string; resource: string; amount?: { minor: number; currency: string } };

/** The in-process service (fixtures, database reads) and instances A and B, both `gavel serve` on its schema. */
async function twoInstances() {
  const svc = await startService(pg!);
  try {
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const key = await svc.keyHeader([]);
    const issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
    // Named as the in-process service's connections are, so a held lock sees their statements (hold-table.ts).
    const url = new URL(databaseUrl(svc.ts.options)!);
    url.searchParams.set('application_name', `gavel/${(svc.ts.options as { schema: string }).schema}`);
    const env = { GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: url.toString() };
    const [a, b] = await Promise.all([spawnGavel(env), spawnGavel(env)]);
    return {
      svc, a, b,
      async decide(on: GavelProcess, payload: Payload): Promise<Decided> {
        const res = await fetch(`${on.url}/v1/authorize`, { method: 'POST', headers: { ...key, 'content-type': 'application/json' }, body: JSON.stringify(payload) });
        const body = await res.text();
        assert.equal(res.status, 200, body);
        return JSON.parse(body) as Decided;
      },
      /** The console route, as a PERMIT_ISSUER: answers the status and body. */
      async revoke(on: GavelProcess, commitment: string): Promise<{ status: number; body: string }> {
        const res = await fetch(`${on.url}/v1/console/projects/${svc.projectId}/permits/${commitment}/revoke`, { method: 'POST', headers: issuer.post, body: '{}' });
        return { status: res.status, body: await res.text() };
      },
      stop: async () => { await Promise.all([a.kill(), b.kill()]); await svc.stop(); },
    };
  } catch (error) {
    await svc.stop();
    throw error;
  }
}

/** The decision's audit event agrees with its answer: the same decision, reason and detail, for this permit (its last link). */
async function assertAudited(svc: TestService, decided: Decided, permit: string): Promise<void> {
  const row = await svc.ts.store.db.selectFrom('audit_events').select(['kind', 'data']).where('id', '=', decided.audit_id).executeTakeFirstOrThrow();
  const data = JSON.parse(row.data) as Record<string, unknown>;
  assert.equal(row.kind, 'decision');
  assert.deepEqual([data.decision, data.reason_code, data.detail ?? undefined, data.permit_commitment],
    [decided.decision, decided.reason_code, decided.detail, presentedCommitment(permit)]);
}

function assertRevoked(decided: Decided): void {
  assert.deepEqual([decided.decision, decided.reason_code], ['DENY', 'permit_invalid'], JSON.stringify(decided));
  assert.match(decided.detail ?? '', /^revoked/);
}

test('a permit revoked through one instance is refused by another that has it cached, with the permits delegated from it (PostgreSQL)', { skip }, async () => {
  const t = await twoInstances();
  try {
    const parent = newAgent();
    const child = newAgent();
    const root = await issue(t.svc, parent.did, READ);
    const asParent: Payload = { agent: parent.did, permit: root.jws, action: 'read', resource: 'resource://docs/a' };
    const asChild: Payload = { ...asParent, agent: child.did, permit: await delegate(root.jws, parent, child.did, READ) };
    // B verifies and caches both chains; twice, so that its key context is cached too and the
    // parent's next decision takes the one statement (decision 0012), the delegate's the transaction.
    for (let i = 0; i < 2; i++) for (const r of [asParent, asChild]) assert.equal((await t.decide(t.b, r)).decision, 'ALLOW');
    const revoked = await t.revoke(t.a, root.commitment);
    assert.equal(revoked.status, 200, revoked.body);
    for (const r of [asParent, asChild]) {
      const denied = await t.decide(t.b, r);
      assertRevoked(denied);
      await assertAudited(t.svc, denied, r.permit);
    }
  } finally { await t.stop(); }
});

test('a use count spent through one instance is spent for another that has the permit cached (PostgreSQL)', { skip }, async () => {
  const t = await twoInstances();
  try {
    const agent = newAgent();
    const { jws, commitment } = await issue(t.svc, agent.did, { actions: ['pay'], resources: ['resource://shop/*'], max_uses: 2 });
    const pay: Payload = { agent: agent.did, permit: jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } };
    assert.equal((await t.decide(t.b, pay)).decision, 'ALLOW');
    assert.equal((await t.decide(t.a, pay)).decision, 'ALLOW');
    for (const on of [t.b, t.a]) {
      const denied = await t.decide(on, pay);
      assert.deepEqual([denied.decision, denied.reason_code], ['DENY', 'permit_invalid'], JSON.stringify(denied));
      assert.match(denied.detail ?? '', /^uses_exhausted/);
      await assertAudited(t.svc, denied, jws);
    }
    const usage = await t.svc.ts.store.db.selectFrom('permit_usage').select('uses').where('commitment', '=', commitment).executeTakeFirstOrThrow();
    assert.equal(Number(usage.uses), 2);
  } finally { await t.stop(); }
});

// B's decision is held at its commit: another session holds a row the decision's last statements
// must lock, after the decision has read the permit chain's revocation (its agent's row for the one
// statement and the agent lock of the transaction, the budget's row for a spend). Meanwhile the
// root permit is revoked through A. Either the revocation commits while the decision is held, and
// the decision, committing after it, must be a DENY; or the revocation waits for the decision to
// commit first (what happens: it queues on the agents table lock every decision holds, as a freeze
// does, decision 0026), and then binds the next decision. Never an ALLOW committed after it.
const PATHS = ['one statement', 'the transaction, spending', 'a delegate, the transaction'] as const;
for (const path of PATHS) test(`a revocation committed while a decision is in flight on another instance records no ALLOW after it (PostgreSQL, ${path})`, { skip }, async () => {
  const t = await twoInstances();
  let held: HeldTable | undefined;
  try {
    const parent = newAgent();
    let payload: Payload;
    let root: { jws: string; commitment: string };
    let hold: () => Promise<HeldTable>;
    let waits: string;
    const schema = (t.svc.ts.options as { schema: string }).schema;
    const url = process.env.GAVEL_TEST_DATABASE_URL!;
    const holdAgent = (agent: Agent) => () => holdRowsWhere(url, schema, 'agents', 'project_id = $1 and did = $2', [t.svc.projectId, agent.did]);
    if (path === 'the transaction, spending') {
      root = await issue(t.svc, parent.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 10_000, currency: 'EUR' } });
      payload = { agent: parent.did, permit: root.jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: 100, currency: 'EUR' } };
      hold = () => holdRowsWhere(url, schema, 'permit_usage', 'commitment = $1', [root.commitment]);
      waits = 'update "permit_usage"%';
    } else if (path === 'a delegate, the transaction') {
      const child = newAgent();
      root = await issue(t.svc, parent.did, READ);
      payload = { agent: child.did, permit: await delegate(root.jws, parent, child.did, READ), action: 'read', resource: 'resource://docs/a' };
      hold = holdAgent(child);
      waits = 'select a.frozen_at%';
    } else {
      root = await issue(t.svc, parent.did, READ);
      payload = { agent: parent.did, permit: root.jws, action: 'read', resource: 'resource://docs/a' };
      hold = holdAgent(parent);
      waits = 'with x as%';
    }
    // Warm B: the permit verified and cached, the key context cached, the agents' and budget's rows there.
    for (let i = 0; i < 2; i++) assert.equal((await t.decide(t.b, payload)).decision, 'ALLOW');
    held = await hold();
    const inFlight = t.decide(t.b, payload);
    await held.reached(waits);
    let answered = false;
    const revocation = t.revoke(t.a, root.commitment).finally(() => { answered = true; });
    // Until the revocation has answered (committed) or waits on a lock itself.
    await held.reached('lock table agents%', { unless: revocation });
    const answeredWhileHeld = answered;
    await held.release();
    held = undefined;
    const decided = await inFlight;
    const revoked = await revocation;
    assert.equal(revoked.status, 200, revoked.body);
    // The held decision cannot have committed before the revocation that answered meanwhile.
    if (answeredWhileHeld) assertRevoked(decided);
    else assert.equal(decided.decision, 'ALLOW', 'the revocation waited for the decision to commit');
    await assertAudited(t.svc, decided, payload.permit);
    const next = await t.decide(t.b, payload);
    assertRevoked(next);
    await assertAudited(t.svc, next, payload.permit);
  } finally {
    await held?.release();
    await t.stop();
  }
});

// The other order: the revocation is asked for while a decision is in flight (another session holds
// a share lock on agents, as one does), and waits for it; decisions that arrive on B meanwhile, by
// either path, wait behind the revocation and then read it, though their permits are cached.
test('decisions that arrive while a revocation waits for one in flight wait for it and are denied (PostgreSQL)', { skip }, async () => {
  const t = await twoInstances();
  let held: HeldTable | undefined;
  try {
    const parent = newAgent();
    const child = newAgent();
    const busy = newAgent();
    const root = await issue(t.svc, parent.did, READ);
    await issue(t.svc, busy.did, READ);
    const asParent: Payload = { agent: parent.did, permit: root.jws, action: 'read', resource: 'resource://docs/a' };
    const asChild: Payload = { ...asParent, agent: child.did, permit: await delegate(root.jws, parent, child.did, READ) };
    for (let i = 0; i < 2; i++) for (const r of [asParent, asChild]) assert.equal((await t.decide(t.b, r)).decision, 'ALLOW');
    const schema = (t.svc.ts.options as { schema: string }).schema;
    held = await holdRowsWhere(process.env.GAVEL_TEST_DATABASE_URL!, schema, 'agents', 'project_id = $1 and did = $2', [t.svc.projectId, busy.did]);
    const revocation = t.revoke(t.a, root.commitment);
    await held.reached('lock table agents%');
    const decisions = [asParent, asChild].map((r) => t.decide(t.b, r));
    await held.reached('with x as%', { unless: Promise.any(decisions) });
    await held.reached('select a.frozen_at%', { unless: Promise.any(decisions) });
    await held.release();
    held = undefined;
    const revoked = await revocation;
    assert.equal(revoked.status, 200, revoked.body);
    for (const [i, decided] of (await Promise.all(decisions)).entries()) {
      assertRevoked(decided);
      await assertAudited(t.svc, decided, [asParent, asChild][i]!.permit);
    }
  } finally {
    await held?.release();
    await t.stop();
  }
});

// The table lock a revocation queues on pauses every decision of the database: one that changes
// nothing answers without it. A transaction of another connection holds a share lock on agents,
// as a decision in flight does; a revocation that took the table lock would wait for it for ever.
test('revoking a revoked or unknown permit answers 409 or 404 without queuing for the table lock (PostgreSQL)', { skip, timeout: 120_000 }, async () => {
  const svc = await startService(pg!);
  const other = svc.ts.reopen();
  try {
    const issuer = await consoleMember(svc, ['PERMIT_ISSUER']);
    const { commitment } = await issue(svc, newAgent().did, READ);
    const revoke = (c: string) => svc.app.inject({ method: 'POST', url: `/v1/console/projects/${svc.projectId}/permits/${c}/revoke`, headers: issuer.post, payload: {} });
    assert.equal((await revoke(commitment)).statusCode, 200);
    await other.db.transaction().execute(async (trx) => {
      await sql`select 1 from agents limit 1 for share`.execute(trx);
      const again = await revoke(commitment);
      assert.deepEqual([again.statusCode, again.json().code], [409, 'already_revoked'], again.body);
      const unknown = await revoke('0'.repeat(64));
      assert.deepEqual([unknown.statusCode, unknown.json().code], [404, 'not_found'], unknown.body);
    });
  } finally { await svc.stop(); }
});
