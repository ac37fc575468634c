// The proof routes serve only proofs that prove something: a stored node, a leaf hash or a
// checkpoint's root column altered in the database makes them answer 500 log_damaged, where they
// used to serve a path or a consistency proof a client would find false (decision 0652, addendum).
// An intact log still answers 200, with proofs an auditor's verifier sharing no code with src/
// accepts (./independent-verifier.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAuditConsistency } from '../../src/cli/audit-consistency.ts';
import { runAuditVerify } from '../../src/cli/audit-verify.ts';
import { planConsistency, planInclusion, planRoot, type NodeAddress } from '../../src/domain/auditlog/tree.ts';
import type { Store } from '../../src/store/store.ts';
import { backends, type Backend } from '../support/backends.ts';
import * as v from './independent-verifier.ts';
import { addEvents, startAuditService } from './support.ts';

const ALTERED = Buffer.alloc(32, 0xab);

/**
 * A log with two checkpoints (`first` and `last`, no witness: proofs anchor to the newest) over
 * events of the test's project, and the routes as a client calls them. The caller stops `a`.
 */
async function twoCheckpoints(backend: Backend) {
  const a = await startAuditService(backend, 'none');
  try {
    const store = a.svc.ts.store;
    const ids = await addEvents(store, a.svc.projectId, 7);
    const first = (await a.svc.auditLog.tick({ force: true })).checkpoint!;
    ids.push(...await addEvents(store, a.svc.projectId, 6));
    const last = (await a.svc.auditLog.tick({ force: true })).checkpoint!;
    assert.ok(first >= 7 && last === first + 6, `checkpoints at ${first} and ${last}`);
    const key = await a.svc.keyHeader([]);
    const base = `/v1/projects/${a.svc.projectId}/audit`;
    const get = (url: string) => a.svc.app.inject({ method: 'GET', url: `${base}${url}`, headers: key });
    const proof = (id: string) => get(`/${id}/proof`);
    const consistency = (from: number, to: number) => get(`/consistency?from=${from}&to=${to}`);
    const leafIndex = async (id: string) => Number((await store.db.selectFrom('audit_events').select('leaf_index').where('id', '=', id).executeTakeFirstOrThrow()).leaf_index);
    return { a, store, ids, first, last, proof, consistency, leafIndex, logKey: v.parseVkey(a.logVkey) };
  } catch (e) { await a.stop(); throw e; }
}

/** Overwrites a node of the tree where it is stored: a leaf's hash in its event's row, any larger subtree in audit_nodes. */
async function alterNode(store: Store, node: NodeAddress): Promise<void> {
  const altered = node.level === 0
    ? await store.db.updateTable('audit_events').set({ leaf_hash: ALTERED }).where('leaf_index', '=', node.index).executeTakeFirst()
    : await store.db.updateTable('audit_nodes').set({ hash: ALTERED }).where('level', '=', node.level).where('idx', '=', node.index).executeTakeFirst();
  assert.equal(Number(altered.numUpdatedRows), 1, `node ${node.level}/${node.index} is stored`);
}

/** The first stored node of `nodes` above the leaves (in audit_nodes). */
const interior = (nodes: readonly NodeAddress[]): NodeAddress => {
  const node = nodes.find((n) => n.level > 0);
  assert.ok(node, 'the plan holds a node above the leaves');
  return node;
};

async function assertDamaged(res: { statusCode: number; body: string; json(): { code: string; detail: string } }, detail: RegExp): Promise<void> {
  assert.equal(res.statusCode, 500, res.body);
  assert.equal(res.json().code, 'log_damaged');
  assert.match(res.json().detail, detail);
}

const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

for (const backend of backends()) {
  test(`an intact log answers 200 with inclusion and consistency proofs an independent verifier accepts, from size 0 too (${backend.name})`, async () => {
    const t = await twoCheckpoints(backend);
    const dir = mkdtempSync(join(tmpdir(), 'gavel-contradicted-'));
    try {
      for (const id of t.ids) {
        const res = await t.proof(id);
        assert.equal(res.statusCode, 200, res.body);
        const p = res.json();
        const cp = v.parseCheckpoint(v.openNote(p.checkpoint, t.logKey).text);
        assert.equal(p.tree_size, t.last);
        assert.equal(cp.size, p.tree_size);
        assert.equal(p.root, b64(cp.root));
        const leaf = v.leafHash(Buffer.from(v.canonicalJson({ ...p.event, leaf_version: p.leaf_version }), 'utf8'));
        v.verifyInclusion(p.leaf_index, p.tree_size, leaf, (p.path as string[]).map(v.base64), cp.root);
      }
      // Between checkpoints, from and to sizes no checkpoint signs, equal sizes, and from the empty tree.
      for (const [m, n] of [[t.first, t.last], [t.first - 1, t.last], [3, t.first + 2], [t.first + 1, t.first + 1], [t.first, t.first], [0, t.last], [0, 0]] as const) {
        const res = await t.consistency(m, n);
        assert.equal(res.statusCode, 200, `${m}..${n}: ${res.body}`);
        const c = res.json();
        for (const [note, root, size] of [[c.from_checkpoint, c.from_root, m], [c.to_checkpoint, c.to_root, n]] as const) {
          if (note !== null) assert.equal(root, b64(v.parseCheckpoint(v.openNote(note, t.logKey).text).root), `the root of ${size} is the one its checkpoint signs`);
        }
        v.verifyConsistency(m, n, v.base64(c.from_root), v.base64(c.to_root), (c.proof as string[]).map(v.base64));
      }
      // What the CLI answers for the route's answer from size 0: consistent, with nothing to prove.
      const file = join(dir, 'from-empty.json');
      writeFileSync(file, (await t.consistency(0, t.last)).body);
      let said = '';
      assert.equal(await runAuditConsistency([file, '--log-key', t.a.logVkey], { write: (s: string) => { said += s; } }, { write: () => {} }), 0, said);
      assert.match(said, /^CONSISTENT: .* extends the empty tree \(size 0\), as every tree does/);
    } finally { rmSync(dir, { recursive: true, force: true }); await t.a.stop(); }
  });

  test(`an inclusion proof through an altered node is 500 log_damaged, not a path to another root (${backend.name})`, async () => {
    const t = await twoCheckpoints(backend);
    try {
      const id = t.ids[0]!;
      await alterNode(t.store, interior(planInclusion(await t.leafIndex(id), t.last).nodes));
      await assertDamaged(await t.proof(id), /the inclusion path of leaf \d+ in the tree of \d+, from the stored nodes, does not lead to the root its signed checkpoint states/);
    } finally { await t.a.stop(); }
  });

  test(`an inclusion proof through an altered leaf hash, or of an event whose row was rewritten, is 500 log_damaged (${backend.name})`, async () => {
    const t = await twoCheckpoints(backend);
    try {
      // The sibling leaf's recorded hash is the path's first hash.
      const [id, other] = [t.ids[2]!, t.ids[5]!];
      await alterNode(t.store, { level: 0, index: await t.leafIndex(id) ^ 1 });
      await assertDamaged(await t.proof(id), /does not lead to the root its signed checkpoint states/);
      // The event's own row rewritten (still JSON): its leaf is no longer the one the tree holds.
      assert.equal((await t.proof(other)).statusCode, 200);
      await t.store.db.updateTable('audit_events').set({ data: JSON.stringify({ rewritten: true }) }).where('id', '=', other).execute();
      await assertDamaged(await t.proof(other), /does not lead to the root its signed checkpoint states/);
    } finally { await t.a.stop(); }
  });

  test(`a checkpoint whose root column contradicts its signed note anchors no proof: 500 log_damaged on both routes (${backend.name})`, async () => {
    const t = await twoCheckpoints(backend);
    try {
      await t.store.db.updateTable('audit_checkpoints').set({ root: ALTERED }).where('size', '=', t.last).execute();
      const contradicted = /the stored checkpoint does not match its signed text \(size \d+\)/;
      await assertDamaged(await t.proof(t.ids[0]!), contradicted);
      await assertDamaged(await t.consistency(t.first, t.last), contradicted);
      await assertDamaged(await t.consistency(t.last, t.last), contradicted);
      // A size no checkpoint signs is anchored to the newest checkpoint, so it is refused too.
      await assertDamaged(await t.consistency(t.first - 1, t.first + 1), contradicted);
      assert.equal((await t.consistency(t.first - 1, t.first)).statusCode, 200, 'a proof that does not rest on it is still served');
    } finally { await t.a.stop(); }
  });

  test(`a checkpoint whose root was rewritten in its note and its column alike is not signed: 500 log_damaged (${backend.name})`, async () => {
    const t = await twoCheckpoints(backend);
    try {
      const row = await t.store.db.selectFrom('audit_checkpoints').select('note').where('size', '=', t.last).executeTakeFirstOrThrow();
      const note = row.note.split('\n').map((line, i) => (i === 2 ? b64(ALTERED) : line)).join('\n');
      await t.store.db.updateTable('audit_checkpoints').set({ root: ALTERED, note }).where('size', '=', t.last).execute();
      const unsigned = /the stored checkpoint is not signed by the log key/;
      await assertDamaged(await t.proof(t.ids[0]!), unsigned);
      await assertDamaged(await t.consistency(t.first, t.last), unsigned);
    } finally { await t.a.stop(); }
  });

  test(`a consistency proof through an altered node, or the root of a size no checkpoint signs, is 500 log_damaged (${backend.name})`, async () => {
    const t = await twoCheckpoints(backend);
    try {
      // Between two checkpoints: a node of the proof.
      await alterNode(t.store, interior(planConsistency(t.first, t.last).nodes));
      await assertDamaged(await t.consistency(t.first, t.last), new RegExp(`consistency proof from ${t.first} to ${t.last} does not lead from the root of ${t.first} to the root of ${t.last} its checkpoint signs`));
    } finally { await t.a.stop(); }
    const u = await twoCheckpoints(backend);
    try {
      // A size no checkpoint signs, asked for alone: its root from the stored nodes, one of them altered.
      const size = u.first - 1;
      await alterNode(u.store, interior(planRoot(size).nodes));
      await assertDamaged(await u.consistency(size, size), new RegExp(`the stored tree's root of size ${size}, which no checkpoint signs, is not consistent with the root the newest checkpoint \\(size ${u.last}\\) signs`));
    } finally { await u.a.stop(); }
  });

  test(`a witnessed checkpoint whose stored cosignature was altered anchors no proof, which gavel audit verify would refuse: 500 log_damaged on both routes (${backend.name})`, async () => {
    const a = await startAuditService(backend, 'own');
    const dir = mkdtempSync(join(tmpdir(), 'gavel-cosig-'));
    try {
      const store = a.svc.ts.store;
      const [id] = await addEvents(store, a.svc.projectId, 3);
      await a.svc.auditLog.tick({ force: true });
      const cp = await store.db.selectFrom('audit_checkpoints').select(['size', 'cosignatures']).where('witnessed_at', 'is not', null).orderBy('size', 'desc').executeTakeFirstOrThrow();
      const key = await a.svc.keyHeader([]);
      const get = (url: string) => a.svc.app.inject({ method: 'GET', url: `/v1/projects/${a.svc.projectId}/audit${url}`, headers: key });
      const verifyFile = async (body: string) => {
        const file = join(dir, 'proof.json');
        writeFileSync(file, body);
        let said = '';
        const code = await runAuditVerify([file, '--log-key', a.logVkey, '--witness-key', a.witness!.publicKeyVkey], { write: (s: string) => { said += s; } } as never, { write: (s: string) => { said += s; } } as never);
        return { code, said };
      };
      const intact = await get(`/${id}/proof`);
      assert.equal(intact.statusCode, 200, intact.body);
      assert.equal(intact.json().witnessed, true);
      const before = await verifyFile(intact.body);
      assert.equal(before.code, 0, before.said);
      // One bit of the witness's signature, flipped where it is stored.
      const line = cp.cosignatures!;
      const cut = line.lastIndexOf(' ') + 1;
      const raw = Buffer.from(line.slice(cut).trim(), 'base64');
      raw[raw.length - 1]! ^= 1;
      await store.db.updateTable('audit_checkpoints').set({ cosignatures: `${line.slice(0, cut)}${raw.toString('base64')}\n` }).where('size', '=', cp.size).execute();
      // Served, that proof is one the CLI refuses under the same keys: the route refuses it first.
      const served = { ...intact.json(), cosignatures: [`${line.slice(0, cut)}${raw.toString('base64')}\n`] };
      served.checkpoint = served.checkpoint.slice(0, served.checkpoint.length - line.length) + served.cosignatures[0];
      assert.notEqual((await verifyFile(JSON.stringify(served))).code, 0, 'the CLI refuses the altered cosignature');
      const altered = /the stored cosignature of the witnessed checkpoint of size \d+ does not verify under the pinned witness key/;
      await assertDamaged(await get(`/${id}/proof`), altered);
      await assertDamaged(await get(`/consistency?from=${cp.size}&to=${cp.size}`), altered);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await a.stop();
    }
  });
}
