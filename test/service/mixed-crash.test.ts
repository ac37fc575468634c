// A real server runs a mixed workload (spending decisions; approvals opened, recorded, then consumed
// or revoked; permits issued, used through a delegate and revoked; an agent frozen and released;
// policies saved and activated; API keys minted and revoked; service principals created, keyed,
// granted a role and removed), is killed with SIGKILL four times at different points and restarted
// on the same database (on PostgreSQL a second instance serves beside it throughout). Then what an
// auditor checks: everything a client was told succeeded is there with its audit event; nothing is
// half done (a spend, a consumed or withdrawn approval, a revocation, a freeze, a removal or a
// policy pointer without the record that explains it); the Merkle log is gapless, each leaf
// recomputes from its row, every checkpoint is the root of those leaves and extends the one before,
// and the witness cosigned the newest head; and both servers answer as the database says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends } from '../support/backends.ts';
import { databaseUrl, spawnGavel, type GavelProcess } from '../support/process.ts';
import { startService } from '../support/service.ts';
import { ALLOW_PAYMENTS, activatePolicy, delegate, issue, newAgent } from '../support/authorize.ts';
import { newApprover } from '../support/approvals.ts';
import { consoleMember } from '../support/console.ts';
import { recordedDecisions } from '../support/decisions.ts';
import { openStore } from '../../src/store/store.ts';
import { openCheckpoint } from '../../src/domain/auditlog/checkpoint.ts';
import { parseVkey } from '../../src/domain/auditlog/note.ts';
import { bytesEqual } from '../../src/domain/auditlog/bytes.ts';
import { verifyConsistency } from '../../src/domain/auditlog/verify.ts';
import { consistencyFromStore, rootOfSize } from '../../src/services/auditlog/checkpointer.ts';
import { logIdentity } from '../../src/services/auditlog/log.ts';
import { LocalSigner } from '../../src/signer/local.ts';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startWitness } from '../../src/witness/server.ts';
import * as v from '../auditlog/independent-verifier.ts';

const SMALL = 100;
const LARGE = 50_000;
/**
 * Each life of the server but the last: how many operations are acknowledged before it is killed,
 * and whether every client must first have finished a round (so that every kind of operation runs).
 */
const LIVES = [{ acked: 5, everyLane: false }, { acked: 30, everyLane: true }, { acked: 60, everyLane: true }, { acked: 20, everyLane: false }];

/** What clients were told succeeded. */
interface Ledger {
  allows: { auditId: string; amount: number }[];
  approved: string[];
  consumed: { obligation: string; auditId: string }[];
  /** Approvals revoked before use. */
  withdrawn: string[];
  issued: string[];
  revoked: string[];
  /** Delegated chains presented (ALLOW) whose root was revoked afterwards. */
  revokedChains: string[];
  freezes: { kind: 'agent.frozen' | 'agent.released' }[];
  saved: number[];
  activated: number[];
  minted: { id: string; secret: string }[];
  keysRevoked: string[];
  /** Service principals created, and those whose membership was then revoked. */
  principals: string[];
  membersRevoked: string[];
}

for (const backend of backends()) {
  test(`mixed workload killed four times on ${backend.name}: nothing acknowledged lost, nothing half done, log verifies`, { timeout: 600_000 }, async () => {
    const svc = await startService(backend);
    await activatePolicy(svc, ALLOW_PAYMENTS);
    const payer = newAgent(), holder = newAgent(), sub = newAgent(), frozen = newAgent();
    const budget = await issue(svc, payer.did, { actions: ['pay'], resources: ['resource://shop/*'], budget: { minor: 1_000_000_000_000, currency: 'EUR' } });
    const frozenPermit = await issue(svc, frozen.did, { actions: ['read'], resources: ['resource://docs/*'] });
    const key = (await svc.member(['ADMIN', 'POLICY_AUTHOR'])).key;
    const approver = await newApprover(svc);
    const person = await consoleMember(svc, ['PERMIT_ISSUER', 'ADMIN']);
    const projectId = svc.projectId;
    const options = svc.ts.options;
    // A witness cosigns only heads consistent with the last it cosigned, across every kill.
    const log = await logIdentity(svc.ts.store, new LocalSigner(join(svc.ts.dataDir, 'keys')));
    const witnessDir = mkdtempSync(join(tmpdir(), 'gavel-witness-'));
    const witness = await startWitness({ dataDir: witnessDir, logs: [{ origin: log.origin, vkeys: [log.vkey] }] });
    await svc.close();
    await svc.ts.store.close();
    const env = { GAVEL_DATA_DIR: svc.ts.dataDir, GAVEL_DATABASE_URL: databaseUrl(options), GAVEL_AUDIT_TICK_MS: '20', GAVEL_CHECKPOINT_INTERVAL_MS: '50', GAVEL_WITNESS_URL: witness.url, GAVEL_WITNESS_VKEY: witness.publicKeyVkey };

    const L: Ledger = { allows: [], approved: [], consumed: [], withdrawn: [], issued: [], revoked: [], revokedChains: [], freezes: [], saved: [], activated: [], minted: [], keysRevoked: [], principals: [], membersRevoked: [] };
    const unexpected: string[] = [];
    let acked = 0;
    let policyRound = 0;
    let principalRound = 0;

    // PostgreSQL: a second instance serves beside the one killed and lives through all the kills.
    const peer = backend.name === 'postgres' ? await spawnGavel(env) : undefined;

    /** A client of one server: the API with the machine key (or other headers), the console signed in. */
    async function client(url: string) {
      const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${key}` }) => {
        const res = await fetch(`${url}${path}`, { method, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
        return { status: res.status, body: await res.json() as Record<string, any> };
      };
      // Fetch keeps no cookies: the session and CSRF cookies are taken from the login's answer.
      const login = await fetch(`${url}/v1/console/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: person.name, password: person.password }) });
      assert.equal(login.status, 200);
      const session = { cookie: login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; '), 'x-csrf-token': (await login.json() as { csrf_token: string }).csrf_token };
      const consoleApi = (method: string, path: string, body: unknown) => api(method, `/v1/console/projects/${projectId}${path}`, body, session);
      const pay = (amount: number, extra: object = {}) => api('POST', '/v1/authorize', { agent: payer.did, permit: budget.jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: amount, currency: 'EUR' }, ...extra });
      return { api, consoleApi, pay };
    }
    type Client = Awaited<ReturnType<typeof client>>;

    /** One life of the server: the workload runs until `killAfter` operations were acknowledged, then SIGKILL. */
    async function life({ acked: killAfter, everyLane }: (typeof LIVES)[number], kill: boolean): Promise<GavelProcess> {
      const gavel = await spawnGavel(env);
      // Lanes alternate between the new server and the peer, when there is one.
      const clients = [await client(gavel.url), ...(peer ? [await client(peer.url)] : [])];
      let lanesStarted = 0;
      const P = `/v1/projects/${projectId}`;
      const start = acked;
      let stop = false;
      const expect = (what: string, r: { status: number; body: unknown }, status: number) => {
        if (r.status !== status) { unexpected.push(`${what}: ${r.status} ${JSON.stringify(r.body)}`); throw new Error('unexpected'); }
        acked++;
      };
      const rounds: number[] = [];
      const lane = async (step: (c: Client) => Promise<void>) => {
        const i = lanesStarted++;
        const c = clients[i % clients.length]!;
        rounds[i] = 0;
        while (!stop) {
          try { await step(c); rounds[i]!++; } catch { return; /* killed mid-request (or an unexpected answer, recorded) */ }
        }
      };
      // An approval binds the policy version that asked for it: the approval and policy lanes take turns.
      let turn = Promise.resolve();
      const inTurn = (step: (c: Client) => Promise<void>) => async (c: Client) => {
        const mine = turn.then(() => step(c));
        turn = mine.catch(() => {});
        await mine;
      };
      const lanes = [
        // Spending decisions, two clients.
        ...[0, 1].map(() => lane(async (c) => {
          const r = await c.pay(SMALL);
          expect('small payment', r, 200);
          if (r.body.decision !== 'ALLOW') { unexpected.push(`small payment: ${JSON.stringify(r.body)}`); throw new Error(); }
          L.allows.push({ auditId: r.body.audit_id, amount: SMALL });
        })),
        // An obligation opened, approved, then consumed by the ALLOW of the same request.
        lane(inTurn(async (c) => {
          const opened = await c.pay(LARGE);
          expect('large payment', opened, 200);
          if (opened.body.decision !== 'REQUIRE_APPROVAL') { unexpected.push(`large payment: ${JSON.stringify(opened.body)}`); throw new Error(); }
          const id = opened.body.approval_request_id as string;
          const list = await c.api('GET', `${P}/approvals?limit=500&status=pending`);
          const statement = (list.body.approvals as { id: string; statement: string }[] | undefined)?.find((o) => o.id === id)?.statement;
          if (!statement) { unexpected.push(`obligation ${id} not listed: ${list.status}`); throw new Error(); }
          const approved = await c.api('POST', `${P}/approvals`, { approval_request_id: id, key_id: approver.keyId, signature: approver.sign(statement) }, { authorization: `Bearer ${approver.key}` });
          expect('approval', approved, 201);
          L.approved.push(id);
          if (L.withdrawn.length <= L.consumed.length) {
            // Approvals are revoked before use as often as they are used; the same request then is no ALLOW.
            expect('approval revoke', await c.api('POST', `${P}/approvals/revoke`, { approval_request_id: id }), 200);
            L.withdrawn.push(id);
            const refused = await c.pay(LARGE, { approval_request_id: id });
            expect('withdrawn approval', refused, 200);
            if (refused.body.decision === 'ALLOW') { unexpected.push(`withdrawn approval used: ${JSON.stringify(refused.body)}`); throw new Error(); }
            return;
          }
          const consumed = await c.pay(LARGE, { approval_request_id: id });
          expect('approved payment', consumed, 200);
          if (consumed.body.decision !== 'ALLOW') { unexpected.push(`approved payment: ${JSON.stringify(consumed.body)}`); throw new Error(); }
          L.consumed.push({ obligation: id, auditId: consumed.body.audit_id });
          L.allows.push({ auditId: consumed.body.audit_id, amount: LARGE });
        })),
        // A permit issued, used through a delegate (which records the link), then revoked.
        lane(async (c) => {
          const issued = await c.consoleApi('POST', '/permits', { agent: holder.did, actions: ['read'], resources: ['resource://docs/*'], expires_at: new Date(Date.now() + 3600_000).toISOString() });
          expect('permit issue', issued, 201);
          L.issued.push(issued.body.commitment);
          const chain = await delegate(issued.body.permit, holder, sub.did, { actions: ['read'], resources: ['resource://docs/*'] });
          const used = await c.api('POST', '/v1/authorize', { agent: sub.did, permit: chain, action: 'read', resource: 'resource://docs/a' });
          expect('delegate decision', used, 200);
          if (used.body.decision !== 'ALLOW') { unexpected.push(`delegate decision: ${JSON.stringify(used.body)}`); throw new Error(); }
          const revoked = await c.consoleApi('POST', `/permits/${issued.body.commitment}/revoke`, {});
          expect('permit revoke', revoked, 200);
          L.revoked.push(issued.body.commitment);
          L.revokedChains.push(chain);
        }),
        // An agent frozen and released in turn.
        lane(async (c) => {
          const state = await c.api('GET', `${P}/agents/state?agent=${encodeURIComponent(frozen.did)}`);
          expect('agent state', state, 200);
          const freeze = !state.body.frozen;
          expect(freeze ? 'freeze' : 'release', await c.api('POST', `${P}/agents/${freeze ? 'freeze' : 'release'}`, { agent: frozen.did }), 200);
          L.freezes.push({ kind: freeze ? 'agent.frozen' : 'agent.released' });
        }),
        // A policy saved and activated (the same rules and one that never matches, so decisions keep their answers).
        lane(inTurn(async (c) => {
          const n = ++policyRound;
          const policy = { ...ALLOW_PAYMENTS, rules: [...ALLOW_PAYMENTS.rules, { id: `never-${n}`, effect: 'DENY', when: { op: 'matches_resource', input: 'resource', value: `resource://never/${n}` } }] };
          const saved = await c.api('PUT', `${P}/policy`, { policy, note: `round ${n}` });
          expect('policy save', saved, 201);
          L.saved.push(saved.body.version);
          expect('policy activate', await c.api('POST', `${P}/policy/activate`, { version: saved.body.version }), 200);
          L.activated.push(saved.body.version);
        })),
        // An API key minted, then revoked.
        lane(async (c) => {
          const minted = await c.consoleApi('POST', '/api-keys', { name: 'crash', roles: ['PERMIT_ISSUER'] });
          expect('key mint', minted, 201);
          L.minted.push({ id: minted.body.id, secret: minted.body.secret });
          expect('key revoke', await c.consoleApi('POST', `/api-keys/${minted.body.id}/revoke`, {}), 200);
          L.keysRevoked.push(minted.body.id);
        }),
        // A service principal created, given a key and a role, then removed (which revokes its key).
        lane(async (c) => {
          const created = await c.api('POST', `${P}/principals`, { kind: 'service', name: `crash-${++principalRound}`, roles: ['PERMIT_ISSUER'] });
          expect('principal create', created, 201);
          const id = created.body.principal_id as string;
          L.principals.push(id);
          const minted = await c.consoleApi('POST', '/api-keys', { name: 'member', roles: ['PERMIT_ISSUER'], principal_id: id });
          expect('member key mint', minted, 201);
          L.minted.push({ id: minted.body.id, secret: minted.body.secret });
          expect('role grant', await c.consoleApi('POST', `/members/${id}/roles`, { role: 'AUDITOR' }), 200);
          expect('member revoke', await c.consoleApi('POST', `/members/${id}/revoke`, {}), 200);
          L.membersRevoked.push(id);
        }),
      ];
      if (!kill) { stop = true; await Promise.all(lanes); return gavel; }
      const ready = () => acked - start >= killAfter && (!everyLane || rounds.every((n) => n > 0));
      for (let i = 0; i < 12_000 && !ready() && unexpected.length === 0; i++) await sleep(10);
      await gavel.kill('SIGKILL');
      stop = true;
      await Promise.all(lanes);
      assert.deepEqual(unexpected, []);
      assert.ok(ready(), `${acked - start} operations acknowledged before the kill, rounds per client ${rounds.join(' ')}`);
      return gavel;
    }

    for (const l of LIVES) await life(l, true);
    const last = await life({ acked: 0, everyLane: false }, false);
    const store = openStore(options);
    try {
      assert.deepEqual(unexpected, []);
      const db = store.db;
      // The log: every event sequenced, leaf indexes 0..n-1, every checkpoint the stored tree's root and consistent with the one before.
      const sequenced = async () => Number((await db.selectFrom('audit_log_state').select('size').executeTakeFirstOrThrow()).size);
      const total = async () => Number((await db.selectFrom('audit_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
      for (let i = 0; i < 6000 && (await sequenced()) < (await total()); i++) await sleep(20);
      const n = await total();
      assert.equal(await sequenced(), n, 'every event sequenced');
      const rows = await db.selectFrom('audit_events').select(['id', 'project_id', 'kind', 'actor', 'created_at', 'data', 'leaf_index', 'leaf_hash']).orderBy('leaf_index').execute();
      assert.deepEqual(rows.map((r) => Number(r.leaf_index)), Array.from({ length: n }, (_, i) => i), 'leaf indexes 0..n-1');
      // Each leaf recomputed from its row by the independent verifier (decision 0600), not read from the stored tree.
      const leaves = rows.map((r) => {
        const leaf = v.leafHash(Buffer.from(v.canonicalJson({ id: r.id, project_id: r.project_id, kind: r.kind, actor: r.actor, created_at: r.created_at, data: JSON.parse(r.data), leaf_version: 'gavel-audit-v1' }), 'utf8'));
        if (r.leaf_hash) assert.ok(leaf.equals(Buffer.from(r.leaf_hash)), `leaf ${r.leaf_index} recomputes from its row`);
        return leaf;
      });
      const vkey = parseVkey(log.vkey);
      const cps = await db.selectFrom('audit_checkpoints').select(['size', 'note']).orderBy('size').execute();
      assert.ok(cps.length >= 2);
      let prev: { size: number; root: Uint8Array } | undefined;
      for (const c of cps) {
        const cp = openCheckpoint(c.note, [vkey]).checkpoint;
        assert.ok(bytesEqual(cp.root, await rootOfSize(db, cp.size)), `checkpoint ${cp.size} is the stored tree's root`);
        assert.ok(v.mth(leaves.slice(0, cp.size)).equals(Buffer.from(cp.root)), `checkpoint ${cp.size} is the root of the events' leaves`);
        if (prev) assert.ok(verifyConsistency(prev.size, cp.size, await consistencyFromStore(db, prev.size, cp.size), prev.root, cp.root), `checkpoint ${cp.size} extends ${prev.size}`);
        prev = cp;
      }

      const events = await db.selectFrom('audit_events').select(['id', 'kind', 'data', 'leaf_index', 'seq']).execute();
      const eventData = (kind: string) => events.filter((e) => e.kind === kind).map((e) => JSON.parse(e.data) as Record<string, any>);

      // Decisions: every ALLOW received is recorded, and the budget moved with the recorded ALLOWs only.
      const decisions = await recordedDecisions(db);
      const byAudit = new Map(decisions.map((d) => [d.audit_id, d]));
      const missing = L.allows.filter((a) => byAudit.get(a.auditId)?.decision !== 'ALLOW');
      assert.deepEqual(missing, [], 'every ALLOW received has its decision event');
      const spending = decisions.filter((d) => d.permit_commitment === budget.commitment && d.decision === 'ALLOW');
      const usage = await db.selectFrom('permit_usage').selectAll().where('commitment', '=', budget.commitment).executeTakeFirstOrThrow();
      assert.deepEqual([Number(usage.spent_minor), Number(usage.uses)], [spending.reduce((s, d) => s + d.amount!.minor, 0), spending.length], 'the budget is what the recorded ALLOWs spent');

      // Approvals: acknowledged ones are there; a consumed approval names the recorded ALLOW that consumed it, and only such.
      const approvals = await db.selectFrom('approvals').selectAll().execute();
      const approvalOf = new Map(approvals.map((a) => [a.approval_request_id, a]));
      for (const id of L.approved) assert.ok(approvalOf.has(id), `approval of ${id} recorded`);
      const recordedApprovals = new Set(eventData('approval.recorded').map((d) => d.approval_id));
      for (const a of approvals) assert.ok(recordedApprovals.has(a.id), `approval ${a.id} has its approval.recorded event`);
      for (const c of L.consumed) assert.equal(approvalOf.get(c.obligation)?.consumed_by_decision, byAudit.get(c.auditId)?.decision_id, `approval of ${c.obligation} consumed by the ALLOW received`);
      const obligations = new Map((await db.selectFrom('approval_requests').selectAll().execute()).map((o) => [o.id, o]));
      const decisionIds = new Map(decisions.map((d) => [d.decision_id, d]));
      for (const o of obligations.values()) assert.equal(decisionIds.get(o.decision_id)?.decision, 'REQUIRE_APPROVAL', `obligation ${o.id} was opened by a recorded REQUIRE_APPROVAL`);
      for (const a of approvals) {
        const status = obligations.get(a.approval_request_id)?.status;
        if (a.consumed_by_decision === null) { assert.notEqual(status, 'consumed', `obligation ${a.approval_request_id} consumed without a consuming decision`); continue; }
        const d = decisionIds.get(a.consumed_by_decision);
        assert.equal(d?.decision, 'ALLOW', `approval ${a.id} consumed by a recorded ALLOW`);
        assert.equal(d?.approval_request_id, a.approval_request_id);
        assert.equal(status, 'consumed');
      }
      const revokedApprovalEvents = new Set(eventData('approval.revoked').map((d) => d.approval_id));
      for (const id of L.withdrawn) assert.ok(approvalOf.get(id)?.revoked_at, `approval of ${id} revoked`);
      for (const a of approvals) {
        assert.equal(a.revoked_at !== null, revokedApprovalEvents.has(a.id), `approval ${a.id}: revoked_at and its approval.revoked event go together`);
        assert.equal(a.revoked_at !== null, obligations.get(a.approval_request_id)?.status === 'withdrawn', `approval ${a.id}: revoked exactly when its obligation is withdrawn`);
        assert.ok(a.revoked_at === null || a.consumed_by_decision === null, `approval ${a.id} is not both revoked and consumed`);
      }
      const consumingAllows = decisions.filter((d) => d.decision === 'ALLOW' && d.approval_request_id);
      for (const d of consumingAllows) assert.equal(approvalOf.get(d.approval_request_id!)?.consumed_by_decision, d.decision_id, `ALLOW ${d.decision_id} consumed its approval`);

      // Permits: issued ones are there; every revocation has its event; a revoked root's delegate is refused.
      const permits = new Map((await db.selectFrom('permits').selectAll().execute()).map((p) => [p.commitment, p]));
      const issuedEvents = new Set(eventData('permit.issued').map((d) => d.commitment));
      const revokedEvents = new Set(eventData('permit.revoked').map((d) => d.commitment));
      for (const c of L.issued) assert.ok(permits.has(c) && issuedEvents.has(c), `permit ${c} issued with its event`);
      for (const c of L.revoked) assert.ok(permits.get(c)?.revoked_at, `permit ${c} revoked`);
      for (const p of permits.values()) {
        if (p.parent === null) assert.ok(issuedEvents.has(p.commitment), `root permit ${p.commitment} has its permit.issued event`);
        assert.equal(p.revoked_at !== null, revokedEvents.has(p.commitment), `permit ${p.commitment}: revoked_at and its permit.revoked event go together`);
      }

      // Members: a created principal is there with its event; a removal is whole (no role, no live key, its event).
      const memberships = new Map((await db.selectFrom('memberships').selectAll().where('project_id', '=', projectId).execute()).map((m) => [m.principal_id, m]));
      const grants = await db.selectFrom('role_grants').selectAll().where('project_id', '=', projectId).execute();
      const createdEvents = new Set(eventData('principal.created').map((d) => d.principal_id));
      const memberRevokedEvents = new Set(eventData('member.revoked').map((d) => d.principal_id));
      const grantedEvents = new Set(eventData('role.granted').map((d) => `${d.principal_id} ${d.role}`));
      for (const id of L.principals) assert.ok(memberships.has(id) && createdEvents.has(id), `principal ${id} created with its event`);
      for (const id of L.membersRevoked) assert.ok(memberships.get(id)?.revoked_at, `member ${id} removed`);
      for (const id of createdEvents) {
        const removed = memberships.get(id)!.revoked_at !== null;
        assert.equal(removed, memberRevokedEvents.has(id), `member ${id}: removal and its member.revoked event go together`);
        if (removed) {
          assert.deepEqual(grants.filter((g) => g.principal_id === id), [], `removed member ${id} holds no role`);
          assert.deepEqual((await db.selectFrom('api_keys').select('id').where('principal_id', '=', id).where('revoked_at', 'is', null).execute()), [], `removed member ${id} holds no live key`);
        }
      }
      for (const g of grants.filter((g) => createdEvents.has(g.principal_id))) assert.ok(grantedEvents.has(`${g.principal_id} ${g.role}`), `grant of ${g.role} to ${g.principal_id} has its role.granted event`);

      // The frozen agent's state is the one its last freeze or release event says.
      const agentEvents = events.filter((e) => (e.kind === 'agent.frozen' || e.kind === 'agent.released') && JSON.parse(e.data).agent === frozen.did).sort((a, b) => Number(a.leaf_index) - Number(b.leaf_index));
      assert.ok(agentEvents.length >= L.freezes.length, `${agentEvents.length} freeze events for ${L.freezes.length} acknowledged`);
      agentEvents.forEach((e, i) => assert.equal(e.kind, i % 2 ? 'agent.released' : 'agent.frozen', 'freezes and releases alternate'));
      const agentRow = await db.selectFrom('agents').selectAll().where('did', '=', frozen.did).executeTakeFirstOrThrow();
      assert.equal(agentRow.frozen_at !== null, agentEvents.at(-1)?.kind === 'agent.frozen', 'the agent is frozen exactly when its last event froze it');

      // Policy: saved versions are stored; the pointer names a stored version, the last one an event activated.
      const versions = new Map((await db.selectFrom('policy_versions').selectAll().where('project_id', '=', projectId).execute()).map((v) => [Number(v.version), v]));
      const savedEvents = new Set(eventData('policy.saved').map((d) => d.version));
      for (const v of L.saved) assert.ok(versions.has(v) && savedEvents.has(v), `policy version ${v} saved with its event`);
      assert.deepEqual([...versions.keys()].sort((a, b) => a - b), Array.from({ length: versions.size }, (_, i) => i + 1), 'versions 1..n');
      for (const v of versions.keys()) assert.ok(savedEvents.has(v), `policy version ${v} has its policy.saved event`);
      const active = await db.selectFrom('policy_active').selectAll().where('project_id', '=', projectId).executeTakeFirstOrThrow();
      assert.equal(versions.get(Number(active.version))?.hash, active.hash, 'the active pointer names a stored version');
      const activationEvents = events.filter((e) => e.kind === 'policy.activated').sort((a, b) => Number(a.leaf_index) - Number(b.leaf_index)).map((e) => JSON.parse(e.data) as { version: number; previous_version: number | null });
      activationEvents.forEach((e, i) => assert.equal(e.previous_version, activationEvents[i - 1]?.version ?? null, 'each activation names the one before as previous'));
      const activations = activationEvents.map((e) => e.version);
      for (const v of L.activated) assert.ok(activations.includes(v), `activation of ${v} has its event`);
      assert.equal(Number(active.version), activations.at(-1), 'the active version is the last one activated');

      // API keys: minted ones are there with their event; a revoked key has its event and no longer authenticates.
      const keys = new Map((await db.selectFrom('api_keys').selectAll().execute()).map((k) => [k.id, k]));
      const mintedEvents = new Set(eventData('api_key.minted').map((d) => d.key_id));
      // A key is revoked by its own revocation, or with its holder's membership or its minter's ADMIN role.
      const keyRevokedEvents = new Set([...eventData('api_key.revoked').map((d) => d.key_id), ...[...eventData('member.revoked'), ...eventData('role.revoked')].flatMap((d) => d.keys_revoked ?? [])]);
      for (const k of L.minted) assert.ok(keys.has(k.id) && mintedEvents.has(k.id), `key ${k.id} minted with its event`);
      for (const k of keys.values()) assert.equal(k.revoked_at !== null, keyRevokedEvents.has(k.id), `key ${k.id}: revoked_at and its event go together`);
      for (const id of L.keysRevoked) assert.ok(keys.get(id)?.revoked_at, `key ${id} revoked`);

      // The witness cosigned the whole log after the kills (it refuses a head inconsistent with one it saw).
      const witnessed = async () => Number((await db.selectFrom('audit_checkpoints').select('size').where('witnessed_at', 'is not', null).orderBy('size', 'desc').executeTakeFirst())?.size ?? -1);
      for (let i = 0; i < 6000 && (await witnessed()) < n; i++) await sleep(20);
      assert.ok((await witnessed()) >= n, `the newest head is witnessed (${await witnessed()} of ${n})`);

      // The restarted service (and the peer, which saw the others die) answers as the database says:
      // a payment under the active policy, the frozen agent as it was left, revoked delegates and keys refused.
      for (const server of [last, ...(peer ? [peer] : [])]) {
        const call = async (secret: string, body: object) => fetch(`${server.url}/v1/authorize`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const payment = { agent: payer.did, permit: budget.jws, action: 'pay', resource: 'resource://shop/1', amount: { minor: SMALL, currency: 'EUR' } };
        assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
        const res = await call(key, payment);
        assert.equal(res.status, 200);
        assert.deepEqual(await res.json().then((b: any) => [b.decision, b.policy_version]), ['ALLOW', Number(active.version)]);
        const read = await (await call(key, { agent: frozen.did, permit: frozenPermit.jws, action: 'read', resource: 'resource://docs/a' })).json() as { decision: string; reason_code: string };
        assert.deepEqual([read.decision, read.reason_code === 'agent_frozen'], agentRow.frozen_at ? ['DENY', true] : ['ALLOW', false], `the agent is ${agentRow.frozen_at ? '' : 'not '}frozen: ${JSON.stringify(read)}`);
        for (const chain of L.revokedChains) {
          const r = await (await call(key, { agent: sub.did, permit: chain, action: 'read', resource: 'resource://docs/a' })).json() as { decision: string };
          assert.equal(r.decision, 'DENY', 'a delegate of a revoked permit is refused');
        }
        for (const k of L.minted) {
          const status = (await call(k.secret, payment)).status;
          assert.equal(status, keys.get(k.id)!.revoked_at ? 401 : 200, `key ${k.id} authenticates exactly while it is not revoked`);
        }
      }
      assert.ok(L.allows.length > 0 && L.consumed.length > 0 && L.withdrawn.length > 0 && L.revoked.length > 0 && L.freezes.length > 0 && L.activated.length > 0 && L.keysRevoked.length > 0 && L.membersRevoked.length > 0, `every kind of operation ran: ${JSON.stringify(Object.fromEntries(Object.entries(L).map(([k, v]) => [k, v.length])))}`);
    } finally {
      await last.kill();
      await peer?.kill();
      await store.close();
      await svc.ts.cleanup();
      await witness.close();
      rmSync(witnessDir, { recursive: true, force: true });
    }
  });
}
